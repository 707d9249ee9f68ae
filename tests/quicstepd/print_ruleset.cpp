// print_ruleset: quicstepd's kernel rules for a default config, as the daemon would install
// them (nft text, then the iptables-restore text after a line "#iptables"), for
// bench_rule_cost.py, which measures what they cost a native packet.
//
//   print_ruleset CHANNEL_INTERFACE TUNNEL_V4 [nat|stateless|permissive]
#include <cstdio>
#include <string>

#include "client/nft_rules.hpp"
#include "client/policy_config.hpp"

int main(int argc, char** argv) {
  using quicstep::client::RulesetSpec;
  const std::string mode = argc == 4 ? argv[3] : "stateless";
  if (argc < 3 || argc > 4 || (mode != "nat" && mode != "stateless" && mode != "permissive")) {
    std::fprintf(stderr, "usage: print_ruleset CHANNEL_INTERFACE TUNNEL_V4 "
                         "[nat|stateless|permissive]\n");
    return 2;
  }
  RulesetSpec s;
  s.channel_interface = argv[1];
  s.tunnel_v4 = argv[2];
  s.nat = mode != "permissive";
  s.stateless = mode == "stateless";
  // What the daemon derives for its default config (native switch and watchdog on).
  s.observe_handshakes = s.stateless;
  quicstep::client::DaemonSettings d;
  d.addressing = s.stateless ? quicstep::client::Addressing::stateless
                 : s.nat     ? quicstep::client::Addressing::nat
                             : quicstep::client::Addressing::permissive;
  s.track_native = quicstep::client::tracks_native(d);
  if (auto why = quicstep::client::check_spec(s); !why.empty()) {
    std::fprintf(stderr, "print_ruleset: %s\n", why.c_str());
    return 2;
  }
  std::printf("%s#iptables\n%s", quicstep::client::ruleset_text(s).c_str(),
              quicstep::client::iptables_install_text(s).c_str());
  return 0;
}
