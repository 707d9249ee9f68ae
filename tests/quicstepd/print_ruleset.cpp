// print_ruleset: quicstepd's kernel rules for a default config, as the daemon derives them
// (derive_specs) and would install them: nft text, then the iptables-restore text after a
// line "#iptables". For bench_rule_cost.py, which measures what they cost a native packet.
//
//   print_ruleset CHANNEL_INTERFACE TUNNEL_V4 [nat|stateless|permissive]
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
  if (argc < 3 || argc > 4 || (mode != "nat" && mode != "stateless" && mode != "permissive")) {
    std::fprintf(stderr, "usage: print_ruleset CHANNEL_INTERFACE TUNNEL_V4 "
                         "[nat|stateless|permissive]\n");
    return 2;
  }
  qc::Config config;  // the defaults, as an empty config file gives them
  config.daemon.channel_interface = argv[1];
  config.daemon.addressing = mode == "nat"         ? qc::Addressing::nat
                             : mode == "stateless" ? qc::Addressing::stateless
                                                   : qc::Addressing::permissive;
  qk::RulesetSpec spec;
  qk::RoutingSpec routing;
  // What Channel::attach adds at start: the tunnel address read from the device.
  spec.tunnel_v4 = argv[2];
  if (auto derived = qd::derive_specs(config, &spec, &routing); !derived) {
    std::fprintf(stderr, "print_ruleset: %s\n", derived.error().message.c_str());
    return 2;
  }
  std::printf("%s#iptables\n%s", qk::ruleset_text(spec).c_str(),
              qk::iptables_install_text(spec).c_str());
  return 0;
}
