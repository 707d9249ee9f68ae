// print_ruleset: quicstepd's kernel rules for a default config, as the daemon derives them
// (derive_specs) and would install them: nft text, then the iptables-restore text after a
// line "#iptables", then the routing's `ip rule` commands after a line "#routing" (one per
// line). For bench_rule_cost.py, which measures what they cost a native packet. "routed" is
// the routed native path (stateless addressing), the daemon's default.
//
//   print_ruleset CHANNEL_INTERFACE TUNNEL_V4 [nat|stateless|permissive|routed]
#include <cstdio>
#include <string>

#include "client/core/policy_config.hpp"
#include "client/daemon/daemon.hpp"
#include "client/daemon/specs.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/routing.hpp"

int main(int argc, char** argv) {
  namespace qc = quicstep::client::core;
  namespace qk = quicstep::client::kernel;
  namespace qd = quicstep::client::daemon;
  const std::string mode = argc == 4 ? argv[3] : "stateless";
  if (argc < 3 || argc > 4 ||
      (mode != "nat" && mode != "stateless" && mode != "permissive" && mode != "routed")) {
    std::fprintf(stderr, "usage: print_ruleset CHANNEL_INTERFACE TUNNEL_V4 "
                         "[nat|stateless|permissive|routed]\n");
    return 2;
  }
  qc::Config config;  // the defaults, as an empty config file gives them
  config.daemon.channel_interface = argv[1];
  config.daemon.addressing = mode == "nat"          ? qc::Addressing::nat
                             : mode == "permissive" ? qc::Addressing::permissive
                                                    : qc::Addressing::stateless;
  config.daemon.native_path_routed = mode == "routed";
  qk::RulesetSpec spec;
  qk::RoutingSpec routing;
  // What Channel::attach adds at start: the tunnel address read from the device.
  spec.tunnel_v4 = argv[2];
  if (auto derived = qd::derive_specs(config, &spec, &routing); !derived) {
    std::fprintf(stderr, "print_ruleset: %s\n", derived.error().message.c_str());
    return 2;
  }
  std::printf("%s#iptables\n%s#routing\n", qk::ruleset_text(spec).c_str(),
              spec.routed ? "" : qk::iptables_install_text(spec).c_str());
  for (const auto& cmd : spec.routed ? qk::routed_routing_commands(routing)
                                     : qk::routing_commands(routing)) {
    if (cmd.size() < 3 || cmd[2] != "rule") continue;
    std::string line;
    for (const auto& w : cmd) line += (line.empty() ? "" : " ") + w;
    std::printf("%s\n", line.c_str());
  }
  return 0;
}
