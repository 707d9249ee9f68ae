// KernelProbe and InstalledRouting::restore_rules against the kernel, in a private network
// namespace of a child process (root only; skipped otherwise): what a flush removes is seen
// missing, and restore_rules puts back exactly the missing rules.
#include "client/kernel/kernel_probe.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>  // before the kernel's headers (libc-compat)
#include <linux/netfilter.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <string>
#include <utility>
#include <vector>

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

// Runs the commands in order; the first failure's description, or "".
std::string run_all(const std::vector<std::vector<std::string>>& cmds) {
  for (const auto& cmd : cmds) {
    if (auto e = run(cmd); !e.empty()) return e;
  }
  return "";
}

// qsp0, up, with its peer qsp1 up: the device the tests give addresses and routes.
const std::vector<std::vector<std::string>> kVethPair = {
    {"ip", "link", "add", "qsp0", "type", "veth", "peer", "name", "qsp1"},
    {"ip", "link", "set", "qsp1", "up"},
    {"ip", "link", "set", "qsp0", "up"}};

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
              if (auto e = run_all(kVethPair); !e.empty()) return e;
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

// A socket that names a native device (IPV6_UNICAST_IF, as systemd-resolved's to a link's DNS
// servers) is refused DNS at connect() by the routed rules alone (the channel's table has no
// route through that device); a bound device's rule, added while the daemon runs as when the
// device appears, gives it main's route (the nft route chain then routes it into the channel).
TEST(KernelProbe, DnsThroughANamedDeviceFindsARouteOnceItsDeviceIsBound) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto e = run_all(kVethPair); !e.empty()) return e;
              if (auto e = run_all({
                       {"ip", "-6", "addr", "add", "2001:db8:7::2/64", "dev", "qsp0", "nodad"},
                       {"ip", "-6", "route", "add", "default", "via", "2001:db8:7::1", "dev",
                        "qsp0"}});
                  !e.empty()) {
                return e;
              }
              RoutingSpec spec;
              spec.routed = true;
              spec.channel_interface = "qs-absent0";
              InstalledRouting routing;
              if (auto done = routing.install(spec); !done) return done.error().message;
              const unsigned qsp0 = if_nametoindex("qsp0");
              auto connect_errno = [&] {
                const int fd = ::socket(AF_INET6, SOCK_DGRAM, 0);
                const std::uint32_t index = htonl(qsp0);
                ::setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_IF, &index, sizeof index);
                sockaddr_in6 to{};
                to.sin6_family = AF_INET6;
                to.sin6_port = htons(53);
                inet_pton(AF_INET6, "2001:db8:9::53", &to.sin6_addr);
                const int e = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0
                                  ? 0 : errno;
                ::close(fd);
                return e;
              };
              if (const int e = connect_errno(); e != ENETUNREACH) {
                return std::string("unbound: ") + std::strerror(e);
              }
              if (auto added = routing.add_bound_device("qsp0"); !added) {
                return added.error().message;
              }
              if (auto again = routing.add_bound_device("qsp0"); !again) return "twice";
              if (routing.spec().bound_devices != std::vector<std::string>{"qsp0"}) {
                return "spec has " + std::to_string(routing.spec().bound_devices.size());
              }
              if (const int e = connect_errno(); e != 0) {
                return std::string("bound: ") + std::strerror(e);
              }
              // A device that went takes its rule with it; back, it is added again.
              if (auto removed = routing.remove_bound_device("qsp0"); !removed) {
                return removed.error().message;
              }
              if (!routing.spec().bound_devices.empty()) return "still in the spec";
              if (const int e = connect_errno(); e != ENETUNREACH) {
                return std::string("unbound again: ") + std::strerror(e);
              }
              if (auto added = routing.add_bound_device("qsp0"); !added) {
                return added.error().message;
              }
              // Removed with the rest (any number at its priority).
              routing.remove();
              auto listed = net::run_process({"ip", "-6", "rule", "show"});
              if (!listed.ok() || listed.output.find("qsp0") != std::string::npos) {
                return "left behind: " + listed.output;
              }
              return "";
            }),
            "");
}

// The routed path's native source: what a new socket would get, and what follows a change.
TEST(KernelProbe, NativeSourceFollowsRoutesAndAddresses) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto e = run_all({
                       {"ip", "link", "add", "qsp0", "type", "veth", "peer", "name", "qsp1"},
                       {"ip", "link", "add", "qsp2", "type", "veth", "peer", "name", "qsp3"},
                       {"ip", "link", "set", "qsp1", "up"},
                       {"ip", "link", "set", "qsp3", "up"},
                       {"ip", "link", "set", "qsp0", "up"},
                       {"ip", "link", "set", "qsp2", "up"}});
                  !e.empty()) {
                return e;
              }
              KernelProbe p;
              if (auto opened = p.open(); !opened) return opened.error().message;
              auto expect = [&](IpFamily fam, const std::string& want,
                                const char* when) -> std::string {
                const auto got = p.native_source(fam);
                if (!got) return std::string(when) + ": dump failed";
                if (*got != want) return std::string(when) + ": `" + *got + "', want `" + want + "'";
                return "";
              };
              if (auto e = expect(IpFamily::v4, "", "no route"); !e.empty()) return e;
              std::vector<std::pair<std::vector<std::string>, std::pair<IpFamily, std::string>>>
                  steps = {
                      // The device's address, then a route's preferred source over it.
                      {{"ip", "addr", "add", "198.18.7.2/24", "dev", "qsp0"}, {IpFamily::v4, ""}},
                      {{"ip", "route", "add", "default", "via", "198.18.7.1", "dev", "qsp0",
                        "metric", "100"},
                       {IpFamily::v4, "198.18.7.2"}},
                      {{"ip", "addr", "add", "198.18.7.3/24", "dev", "qsp0"},
                       {IpFamily::v4, "198.18.7.2"}},
                      {{"ip", "route", "change", "default", "via", "198.18.7.1", "dev", "qsp0",
                        "src", "198.18.7.3", "metric", "100"},
                       {IpFamily::v4, "198.18.7.3"}},
                      // A second uplink of lower metric wins; gone, the first is back.
                      {{"ip", "addr", "add", "198.18.8.2/24", "dev", "qsp2"},
                       {IpFamily::v4, "198.18.7.3"}},
                      {{"ip", "route", "add", "default", "via", "198.18.8.1", "dev", "qsp2",
                        "metric", "50"},
                       {IpFamily::v4, "198.18.8.2"}},
                      {{"ip", "link", "set", "qsp2", "down"}, {IpFamily::v4, "198.18.7.3"}},
                      // IPv6: a tentative address is not yet usable, a deprecated one last.
                      {{"ip", "-6", "addr", "add", "2001:db8:7::2/64", "dev", "qsp0", "nodad",
                        "preferred_lft", "0"},
                       {IpFamily::v6, ""}},
                      {{"ip", "-6", "route", "add", "default", "via", "2001:db8:7::1", "dev",
                        "qsp0"},
                       {IpFamily::v6, "2001:db8:7::2"}},
                      {{"ip", "-6", "addr", "add", "2001:db8:7::3/64", "dev", "qsp0", "nodad"},
                       {IpFamily::v6, "2001:db8:7::3"}},
                      // ::4 is the peer's too: tentative, then failed duplicate detection.
                      {{"ip", "-6", "addr", "add", "2001:db8:7::4/64", "dev", "qsp1", "nodad"},
                       {IpFamily::v6, "2001:db8:7::3"}},
                      {{"ip", "-6", "addr", "add", "2001:db8:7::4/64", "dev", "qsp0"},
                       {IpFamily::v6, "2001:db8:7::3"}},
                      {{"ip", "-6", "addr", "del", "2001:db8:7::3/64", "dev", "qsp0"},
                       {IpFamily::v6, "2001:db8:7::2"}},
                  };
              for (const auto& [cmd, want] : steps) {
                if (auto e = run(cmd); !e.empty()) return e;
                const std::string when = "after " + cmd[cmd.size() > 4 ? 4 : cmd.size() - 1];
                if (auto e = expect(want.first, want.second, when.c_str()); !e.empty()) return e;
              }
              return "";
            }),
            "");
}

// A tunnel device's own addresses (stateless addressing's tunnel addresses): the first global
// one of each family, whatever its state but failed duplicate detection; link-local and
// other devices' addresses are not it; the change is seen at once.
TEST(KernelProbe, FirstGlobalAddressOfADevice) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto e = run_all(kVethPair); !e.empty()) return e;
              const unsigned ifindex = if_nametoindex("qsp0");
              KernelProbe p;
              if (auto opened = p.open(); !opened) return opened.error().message;
              auto expect = [&](IpFamily fam, const std::string& want,
                                const std::string& when) -> std::string {
                const auto got = p.first_global_address(fam, ifindex);
                if (!got) return when + ": dump failed";
                if (*got != want) return when + ": `" + *got + "', want `" + want + "'";
                return "";
              };
              // Only a link-local address (veth up): none.
              if (auto e = expect(IpFamily::v6, "", "link-local only"); !e.empty()) return e;
              if (auto e = expect(IpFamily::v4, "", "no address"); !e.empty()) return e;
              std::vector<std::pair<std::vector<std::string>, std::pair<IpFamily, std::string>>>
                  steps = {
                      {{"ip", "addr", "add", "198.18.9.2/24", "dev", "qsp1"}, {IpFamily::v4, ""}},
                      {{"ip", "addr", "add", "198.18.9.3/32", "dev", "qsp0"},
                       {IpFamily::v4, "198.18.9.3"}},
                      {{"ip", "addr", "add", "198.18.9.4/32", "dev", "qsp0"},
                       {IpFamily::v4, "198.18.9.3"}},
                      {{"ip", "addr", "del", "198.18.9.3/32", "dev", "qsp0"},
                       {IpFamily::v4, "198.18.9.4"}},
                      // Tentative (duplicate detection running) counts: it becomes the address.
                      {{"ip", "-6", "addr", "add", "2001:db8:9::2/64", "dev", "qsp0"},
                       {IpFamily::v6, "2001:db8:9::2"}},
                      {{"ip", "-6", "addr", "del", "2001:db8:9::2/64", "dev", "qsp0"},
                       {IpFamily::v6, ""}},
                      {{"ip", "-6", "addr", "add", "2001:db8:9::3/128", "dev", "qsp0", "nodad"},
                       {IpFamily::v6, "2001:db8:9::3"}},
                  };
              for (const auto& [cmd, want] : steps) {
                if (auto e = run(cmd); !e.empty()) return e;
                std::string when = "after";
                for (const auto& word : cmd) when += " " + word;
                if (auto e = expect(want.first, want.second, when); !e.empty()) return e;
              }
              return "";
            }),
            "");
}

}  // namespace
}  // namespace quicstep::client::kernel
