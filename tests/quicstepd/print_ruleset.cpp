// print_ruleset: quicstepd's kernel rules for a default config, as the daemon derives them
// (derive_specs) and would install them: nft text, then the iptables-restore text after a
// line "#iptables". For bench_rule_cost.py, which measures what they cost a native packet.
//
//   print_ruleset CHANNEL_INTERFACE TUNNEL_V4 [nat|stateless|permissive]
#include <cstdio>
#include <string>

#include "client/daemon.hpp"
#include "client/nft_rules.hpp"
#include "client/policy_config.hpp"
#include "client/routing.hpp"

int main(int argc, char** argv) {
  namespace qc = quicstep::client;
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
  qc::RulesetSpec spec;
  qc::RoutingSpec routing;
  // What Channel::attach adds at start: the tunnel address read from the device.
  spec.tunnel_v4 = argv[2];
  if (auto why = qc::derive_specs(config, &spec, &routing); !why.empty()) {
    std::fprintf(stderr, "print_ruleset: %s\n", why.c_str());
    return 2;
  }
  std::printf("%s#iptables\n%s", qc::ruleset_text(spec).c_str(),
              qc::iptables_install_text(spec).c_str());
  return 0;
}
