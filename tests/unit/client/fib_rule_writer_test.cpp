// FibRuleWriter against the kernel: rules added, listed by `ip rule`, deleted one by one and
// all at a priority, in a private network namespace of a child process (root only; skipped
// otherwise).
#include "client/kernel/fib_rule_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>
#include <vector>

#include "client/kernel/routing.hpp"
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

// Every rule command routing.hpp generates reads back into a FibRule (restore_rules writes
// them over netlink); other words and bad values are refused.
TEST(ParseRuleCommand, EveryGeneratedRuleParses) {
  RoutingSpec queue;
  queue.channel_marks = {0x51, 0x53};
  RoutingSpec routed;
  routed.routed = true;
  routed.channel_interface = "qs-wg0";
  routed.source_v4 = "198.18.0.2";
  routed.exempt_v4 = {"198.18.5.1"};
  routed.exempt_v6 = {"2001:db8:5::1"};
  routed.native_v4 = {"192.168.0.0/16"};
  routed.native_v6 = {"fd00::/8"};
  routed.quic_ports = {443, 8443};
  routed.bound_devices = {"eth0", "wlan0"};
  RoutingSpec marked = routed;  // a device channel's
  marked.quic_channel_mark = 0x51;
  int rules = 0;
  for (const auto& cmds : {routing_commands(queue), routed_routing_commands(routed),
                           routed_routing_commands(marked)}) {
    for (const auto& cmd : cmds) {
      if (cmd[2] != "rule") continue;
      ++rules;
      EXPECT_TRUE(parse_rule_command(cmd).has_value()) << net::describe(cmd, {});
    }
  }
  // Per family: the native flows' fwmark rule, exempt, DNS through each bound device, DNS,
  // native prefix, TCP, QUIC; marked: the channel mark's two and the host's own QUIC per port
  // before them.
  EXPECT_EQ(rules, 8 + 2 * (1 + 1 + 2 + 4 + 1 + 2 + 4) + 2 * (1 + 2 + 2 + 1 + 2 + 4 + 1 + 2 + 4));
  auto bound = parse_rule_command({"ip", "-6", "rule", "add", "ipproto", "udp", "dport", "53",
                                   "oif", "wlan0", "lookup", "main", "priority", "10122"});
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->oif, "wlan0");
  EXPECT_EQ(bound->dport, 53);
  auto own = parse_rule_command({"ip", "-6", "rule", "add", "iif", "lo", "ipproto", "udp",
                                 "dport", "443", "lookup", "main", "priority", "10123"});
  ASSERT_TRUE(own);
  EXPECT_EQ(own->iif, "lo");
  EXPECT_EQ(own->table, 254u);
  auto r = parse_rule_command({"ip", "-4", "rule", "add", "fwmark", "0x53/0xff", "lookup",
                               "51820", "priority", "10102"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->fwmark, 0x53u);
  EXPECT_EQ(r->fwmask, 0xffu);
  EXPECT_EQ(r->table, 51820u);
  EXPECT_EQ(r->priority, 10102u);
  r = parse_rule_command({"ip", "-6", "rule", "add", "to", "fd00::/8", "lookup", "main",
                          "priority", "10126"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->has_dst);
  EXPECT_EQ(r->dst_len, 8);
  EXPECT_EQ(r->table, 254u);
  r = parse_rule_command({"ip", "-4", "rule", "add", "ipproto", "udp", "dport", "53",
                          "unreachable", "priority", "10123"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->unreachable);
  EXPECT_EQ(r->ip_proto, 17);
  EXPECT_EQ(r->dport, 53);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"ip", "-4", "rule", "add", "lookup", "main"},                         // no priority
           {"ip", "-4", "rule", "add", "priority", "5"},                          // no action
           {"ip", "-4", "rule", "add", "iif", "a/b", "lookup", "main", "priority", "5"},
           {"ip", "-4", "rule", "add", "oif", "", "lookup", "main", "priority", "5"},
           {"ip", "-4", "rule", "add", "sport", "5", "lookup", "main", "priority", "5"},
           {"ip", "-4", "rule", "add", "dport", "70000", "unreachable", "priority", "5"},
           {"ip", "-4", "rule", "add", "to", "2001:db8::1", "unreachable", "priority", "5"},
           {"ip", "-4", "rule", "add", "to", "10.0.0.0/33", "unreachable", "priority", "5"},
           {"ip", "-4", "rule", "add", "fwmark", "0x51", "unreachable", "priority", "5"},
           {"ip", "-4", "rule", "add", "priority", "5x", "unreachable"},
           {"ip", "-4", "route", "add", "default", "dev", "x"}}) {
    EXPECT_FALSE(parse_rule_command(bad).has_value()) << net::describe(bad, {});
  }
}

// Rules written over netlink from the commands read back as `ip` wrote them.
TEST(ParseRuleCommand, NetlinkRulesEqualTheCommands) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([] {
              RoutingSpec queue;
              queue.channel_marks = {0x51, 0x53};
              RoutingSpec routed;
              routed.routed = true;
              routed.exempt_v4 = {"198.18.5.1"};
              routed.exempt_v6 = {"2001:db8:5::1"};
              routed.native_v4 = {"192.168.0.0/16"};
              routed.native_v6 = {"fd00::/8"};
              routed.bound_devices = {"lo", "qs-absent0"};  // one not there: detached
              RoutingSpec marked = routed;  // a device channel's, at other priorities
              marked.quic_channel_mark = 0x51;
              marked.priority = 10140;
              const auto all = {routing_commands(queue), routed_routing_commands(routed),
                                routed_routing_commands(marked)};
              for (const auto& cmds : all) {
                for (const auto& cmd : cmds) {
                  if (cmd[2] != "rule") continue;
                  if (auto r = net::run_process(cmd); !r.ok()) return net::describe(cmd, r);
                }
              }
              const std::string by_ip = rules("-4") + rules("-6");
              for (const char* fam : {"-4", "-6"}) {
                net::run_process({"ip", fam, "rule", "flush"});
              }
              FibRuleWriter w;
              if (auto opened = w.open(); !opened) return opened.error().message;
              for (const auto& cmds : all) {
                for (const auto& cmd : cmds) {
                  if (cmd[2] != "rule") continue;
                  if (int e = w.add(*parse_rule_command(cmd)); e != 0) {
                    return net::describe(cmd, {}) + ": " + strerror(e);
                  }
                }
              }
              // The flush took the default rules (main, default) too: compare ours only.
              auto ours = [](const std::string& listing) {
                std::string out;
                std::istringstream lines(listing);
                for (std::string line; std::getline(lines, line);) {
                  if (line.rfind("101", 0) == 0) out += line + "\n";
                }
                return out;
              };
              const std::string by_netlink = rules("-4") + rules("-6");
              if (ours(by_ip).empty()) return "no rules listed: " + by_ip;
              if (ours(by_ip) != ours(by_netlink)) {
                return "ip:\n" + ours(by_ip) + "netlink:\n" + ours(by_netlink);
              }
              return std::string();
            }),
            "");
}

}  // namespace
}  // namespace quicstep::client::kernel
