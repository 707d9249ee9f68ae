// KernelProbe and InstalledRouting::restore_rules against the kernel, in a private network
// namespace of a child process (root only; skipped otherwise): what a flush removes is seen
// missing, and restore_rules puts back exactly the missing rules.
#include "client/kernel/kernel_probe.hpp"

#include <gtest/gtest.h>
#include <linux/netfilter.h>
#include <net/if.h>
#include <unistd.h>

#include <string>

#include "client/kernel/routing.hpp"
#include "net/process.hpp"
#include "unit/client/private_netns.hpp"

namespace quicstep::client::kernel {
namespace {

using common::IpFamily;

std::string run(const std::vector<std::string>& cmd) {
  auto r = net::run_process(cmd);
  return r.ok() ? "" : net::describe(cmd, r);
}

TEST(KernelProbe, NftTablesSeenAndMissing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              KernelProbe p;
              if (auto opened = p.open(); !opened) return opened.error().message;
              if (p.nft_table_exists(NFPROTO_INET, "qs_probe") != false) return "present before";
              if (auto e = run({"nft", "add", "table", "inet", "qs_probe"}); !e.empty()) return e;
              if (p.nft_table_exists(NFPROTO_INET, "qs_probe") != true) return "not seen";
              if (p.nft_table_exists(NFPROTO_NETDEV, "qs_probe") != false) return "wrong family";
              if (auto e = run({"nft", "flush", "ruleset"}); !e.empty()) return e;
              if (p.nft_table_exists(NFPROTO_INET, "qs_probe") != false) return "after flush";
              return "";
            }),
            "");
}

TEST(KernelProbe, RulesAndRoutesSeenAfterFlushRestored) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto e = run({"ip", "link", "add", "qsp0", "type", "veth", "peer", "name", "qsp1"});
                  !e.empty()) {
                return e;
              }
              if (auto e = run({"ip", "link", "set", "qsp1", "up"}); !e.empty()) return e;
              if (auto e = run({"ip", "link", "set", "qsp0", "up"}); !e.empty()) return e;
              const unsigned ifindex = if_nametoindex("qsp0");
              RoutingSpec spec;
              spec.routed = true;
              spec.channel_interface = "qsp0";
              spec.source_v4 = "";  // no route: rules only
              InstalledRouting routing;
              if (auto done = routing.install(spec); !done) return done.error().message;
              KernelProbe p;
              if (auto opened = p.open(); !opened) return opened.error().message;
              auto expect_all = [&](const char* when) -> std::string {
                for (auto [fam, flag] : {std::pair{IpFamily::v4, "-4"}, {IpFamily::v6, "-6"}}) {
                  auto have = p.rule_priorities(fam);
                  if (!have) return std::string(when) + ": dump failed";
                  for (auto [prio, n] : routing_rule_priorities(spec, flag)) {
                    if ((*have)[prio] != n) {
                      return std::string(when) + ": priority " + std::to_string(prio) + " has " +
                             std::to_string((*have)[prio]) + ", expected " + std::to_string(n);
                    }
                  }
                }
                return "";
              };
              if (auto e = expect_all("installed"); !e.empty()) return e;
              if (routing_rule_priorities(spec, "-4").size() < 5) return "too few priorities";
              // Flushed (a network manager): missing; restored: all back, none twice.
              if (auto e = run({"ip", "-4", "rule", "flush"}); !e.empty()) return e;
              auto after = p.rule_priorities(IpFamily::v4);
              if (!after || after->count(spec.flow_priority() + 3) != 0) return "flush not seen";
              if (auto done = routing.restore_rules(); !done) return done.error().message;
              if (auto e = expect_all("restored"); !e.empty()) return e;
              if (auto done = routing.restore_rules(); !done) return "twice: " + done.error().message;
              if (auto e = expect_all("restored twice"); !e.empty()) return e;
              // A default route through the device in a table, then the device down.
              if (auto e = run({"ip", "route", "add", "default", "dev", "qsp0", "table", "51821"});
                  !e.empty()) {
                return e;
              }
              if (p.has_default_route(IpFamily::v4, 51821, ifindex) != true) return "route unseen";
              if (p.has_default_route(IpFamily::v4, 51820, ifindex) != false) return "wrong table";
              if (auto e = run({"ip", "link", "set", "qsp0", "down"}); !e.empty()) return e;
              if (p.has_default_route(IpFamily::v4, 51821, ifindex) != false) return "route stays";
              return "";
            }),
            "");
}

}  // namespace
}  // namespace quicstep::client::kernel
