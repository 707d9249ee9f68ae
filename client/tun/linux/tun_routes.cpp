#include "client/tun/linux/tun_routes.hpp"

#include <sstream>

#include "net/process.hpp"

namespace quicstep::client::tun {
namespace {

common::Outcome ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  const net::ProcessResult r = net::run_process(argv);
  if (r.ok()) return {};
  return common::Failure(net::describe(argv, r));
}

bool has_family(const TunRouting& r, common::IpFamily family) {
  for (const IpPrefix& p : r.addresses) {
    if (p.address.family == family) return true;
  }
  return false;
}

std::vector<std::string> rule(const TunRouting& r, const char* family, const char* verb) {
  return {family, "rule", verb, "not", "fwmark", std::to_string(r.fwmark), "table",
          std::to_string(r.table), "priority", std::to_string(r.rule_priority)};
}

constexpr const char* kTable = "quicstep_tun";

}  // namespace

std::string guard_ruleset(const TunRouting& r) {
  std::ostringstream ports;
  for (std::size_t i = 0; i < r.quic_ports.size(); ++i) {
    ports << (i ? ", " : "") << r.quic_ports[i];
  }
  // Only what must never leave natively (TCP, DNS, the QUIC ports): the rest, such as a
  // link's own neighbour discovery to a global next hop or a DHCP renewal, keeps its route.
  const std::string mine = "    meta mark " + std::to_string(r.fwmark) + " return\n" +
                           "    meta oifname { \"" + r.device + "\", \"lo\" } return\n" +
                           "    meta l4proto != { tcp, udp } return\n" +
                           "    meta l4proto udp udp dport != { 53, " + ports.str() +
                           " } return\n";
  std::ostringstream o;
  o << "table inet " << kTable << "\ndelete table inet " << kTable << "\n"
    << "table inet " << kTable << " {\n  counter rerouted {\n  }\n  counter dropped {\n  }\n"
    << "  chain reroute {\n    type route hook output priority mangle; policy accept;\n"
    << mine << "    fib daddr type != unicast return\n    ip6 daddr fe80::/10 return\n"
    << "    counter name \"rerouted\" meta mark set meta mark | " << kRerouteMark << "\n  }\n"
    // After the re-route (the output hook's devices are the first route's): postrouting.
    << "  chain guard {\n    type filter hook postrouting priority filter; policy accept;\n"
    << mine << "    counter name \"dropped\" drop\n  }\n}\n";
  return o.str();
}

common::Outcome install_device_routes(const TunRouting& r) {
  // No IPv6 link-local address: the TUN has no link to solicit routers or report multicast
  // listeners on, and such packets would only load the channel (whose provider drops them).
  if (auto ok = ip({"link", "set", "dev", r.device, "addrgenmode", "none"}); !ok) return ok;
  if (auto ok = ip({"link", "set", "dev", r.device, "mtu", std::to_string(r.mtu), "up"}); !ok) {
    return ok;
  }
  for (const IpPrefix& p : r.addresses) {
    if (auto ok = ip({"address", "replace", p.to_string(), "dev", r.device}); !ok) return ok;
  }
  for (const auto& [family, flag] : {std::pair{common::IpFamily::v4, "-4"},
                                     std::pair{common::IpFamily::v6, "-6"}}) {
    // A family the tunnel has no address in is blocked, not left to the main table: its
    // DNS, TCP and QUIC handshakes would otherwise leave natively.
    const std::vector<std::string> route =
        has_family(r, family)
            ? std::vector<std::string>{flag, "route", "replace", "default", "dev", r.device,
                                       "table", std::to_string(r.table)}
            : std::vector<std::string>{flag, "route", "replace", "unreachable", "default",
                                       "table", std::to_string(r.table)};
    if (auto ok = ip(route); !ok) return ok;
  }
  return {};
}

common::Outcome install_rules(const TunRouting& r) {
  for (const char* flag : {"-4", "-6"}) {
    // Replace, not add: a rule left by an engine that died is taken over, not doubled.
    (void)ip(rule(r, flag, "del"));
    if (auto ok = ip(rule(r, flag, "add")); !ok) return ok;
  }
  return {};
}

common::Outcome add_rule(const TunRouting& r, common::IpFamily family) {
  return ip(rule(r, family == common::IpFamily::v4 ? "-4" : "-6", "add"));
}

common::Outcome install_guard(const TunRouting& r) {
  const std::vector<std::string> nft{"nft", "-f", "-"};
  if (const net::ProcessResult done = net::run_process(nft, guard_ruleset(r)); !done.ok()) {
    return common::Failure(net::describe(nft, done));
  }
  return {};
}

common::Outcome install_routes(const TunRouting& r) {
  if (auto ok = install_device_routes(r); !ok) return ok;
  if (auto ok = install_rules(r); !ok) return ok;
  return install_guard(r);
}

void remove_routes(const TunRouting& r) {
  for (const char* flag : {"-4", "-6"}) {
    while (ip(rule(r, flag, "del")).ok()) {
    }
    (void)ip({flag, "route", "flush", "table", std::to_string(r.table)});
  }
  (void)net::run_process({"nft", "delete", "table", "inet", kTable});
}

}  // namespace quicstep::client::tun
