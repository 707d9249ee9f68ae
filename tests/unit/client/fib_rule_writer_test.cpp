// FibRuleWriter against the kernel: rules added, listed by `ip rule`, deleted one by one and
// all at a priority, in a private network namespace of a child process (root only; skipped
// otherwise).
#include "client/kernel/fib_rule_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "net/process.hpp"
#include "unit/client/private_netns.hpp"

namespace quicstep::client::kernel {
namespace {

using common::FlowKey;
using common::IpAddress;

std::string rules(const char* family) {
  return net::run_process({"ip", family, "rule", "show"}).output;
}

FlowKey flow4() {
  return {IpAddress::v4({198, 18, 0, 2}), IpAddress::v4({198, 18, 10, 10}), 40000, 443, 17};
}

FlowKey flow6() {
  std::array<std::uint8_t, 16> c{0x20, 0x01, 0x0d, 0xb8}, s{0x20, 0x01, 0x0d, 0xb8, 0, 10};
  c[15] = 2;
  s[15] = 10;
  return {IpAddress::v6(c), IpAddress::v6(s), 40001, 8443, 17};
}

TEST(FibRuleWriter, FlowRulesAddListDeleteBothFamilies) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([] {
              FibRuleWriter w;
              if (auto opened = w.open(); !opened) return opened.error().message;
              if (int e = w.add(flow_rule(flow4(), 10099, 254)); e != 0) {
                return "add v4: " + std::string(strerror(e));
              }
              if (int e = w.add(flow_rule(flow6(), 10099, 254)); e != 0) {
                return "add v6: " + std::string(strerror(e));
              }
              // A second add of the same rule is refused (EEXIST), not doubled.
              if (w.add(flow_rule(flow4(), 10099, 254)) != EEXIST) return std::string("no EEXIST");
              const std::string v4 = rules("-4"), v6 = rules("-6");
              const std::string want4 =
                  "10099:\tfrom all to 198.18.10.10 ipproto udp sport 40000 dport 443 lookup main";
              const std::string want6 =
                  "10099:\tfrom all to 2001:db8:a::a ipproto udp sport 40001 dport 8443 lookup "
                  "main";
              if (v4.find(want4) == std::string::npos) return "v4 listing: " + v4;
              if (v6.find(want6) == std::string::npos) return "v6 listing: " + v6;
              if (w.remove(flow_rule(flow4(), 10099, 254)) != 0) return std::string("del v4");
              if (rules("-4").find("10099:") != std::string::npos) return "v4 left: " + rules("-4");
              if (w.remove(flow_rule(flow4(), 10099, 254)) != ENOENT) {
                return std::string("second delete not ENOENT");
              }
              if (rules("-6").find(want6) == std::string::npos) return std::string("v6 gone too");
              return std::string();
            }),
            "");
}

TEST(FibRuleWriter, UnreachableAndRemoveAllAtAPriority) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([] {
              FibRuleWriter w;
              if (auto opened = w.open(); !opened) return opened.error().message;
              FibRule u;
              u.priority = 10150;
              u.unreachable = true;
              u.ip_proto = 17;
              u.dport = 443;
              if (int e = w.add(u); e != 0) return "unreachable: " + std::string(strerror(e));
              FlowKey f = flow4();
              for (int i = 0; i < 40; ++i) {
                f.client_port = static_cast<std::uint16_t>(50000 + i);
                if (int e = w.add(flow_rule(f, 10100, 51820)); e != 0) {
                  return "add: " + std::string(strerror(e));
                }
              }
              if (rules("-4").find("10150:\tfrom all ipproto udp dport 443 unreachable") ==
                  std::string::npos) {
                return "listing: " + rules("-4");
              }
              if (int n = w.remove_all_at(common::IpFamily::v4, 10100); n != 40) {
                return "removed " + std::to_string(n) + " of 40";
              }
              const std::string left = rules("-4");
              if (left.find("10100:") != std::string::npos) return "left: " + left;
              if (left.find("10150:") == std::string::npos) return "took the other rule: " + left;
              if (w.remove_all_at(common::IpFamily::v4, 10150) != 1) return std::string("no 10150");
              return std::string();
            }),
            "");
}

}  // namespace
}  // namespace quicstep::client::kernel
