// TunHealing: quicstep-tun's self-healing (docs/DESIGN.md invariant 6), with quicstepd's
// parts (client/kernel/healer.hpp, client/core/reconciler.hpp). What tun_routes.hpp put in
// the kernel, another tool may remove while the engine runs — `ip rule flush`, `nft flush
// ruleset` (a firewall's reload), the TUN set down by a network manager — and the engine
// would then see none of the traffic it exists for. Three pieces are checked when the kernel
// announces a change (StateWatch: rules, routes, addresses, links, nft) and every 500 ms,
// and each is put back by the installer of its part:
//   ip_rules        the rule `not fwmark F lookup T` in both families (add_rule, for each
//                   family that lacks it)
//   channel_routes  the TUN up with the tunnel's addresses and table T's default route into
//                   it, per family the tunnel has (install_device_routes)
//   nft_table       table inet quicstep_tun, the re-route and the guard (install_guard)
// A piece another tool keeps removing backs off, a failed restore is retried, all of it
// logged and counted in `status` under "healing" (quicstepctl's vocabulary). Meanwhile it
// fails closed as tun_routes.hpp says. A TUN device that is gone (deleted) is created again
// by the engine (EngineRunner::on_tun_gone: the descriptor reads EBADFD), with its
// addresses and routes; until then its piece's restore fails and is retried.
#pragma once

#include <nlohmann/json.hpp>

#include "client/kernel/healer.hpp"
#include "client/kernel/kernel_probe.hpp"
#include "client/kernel/state_watch.hpp"
#include "client/tun/linux/tun_routes.hpp"
#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::tun {

class TunHealing {
 public:
  explicit TunHealing(TunRouting routing);

  // Opens the probe, the kernel's announcements and the 500 ms timer, and registers the
  // pieces. Failure: a socket's (then there is no healing; the caller logs it).
  common::Outcome open();
  // Descriptors for the caller's loop; each callback drains its descriptor and checks.
  int route_fd() const { return watch_.route_fd(); }
  int nft_fd() const { return watch_.nft_fd(); }
  int timer_fd() const { return timer_.get(); }
  void on_route();
  void on_nft();
  void on_timer();

  // {"healthy", "checks", "pieces": {...}}: Healer::status_json().
  nlohmann::json status_json() const { return healer_.status_json(); }

 private:
  std::optional<bool> rules_present();
  common::Outcome restore_rules();
  std::optional<bool> routes_present();

  TunRouting routing_;
  kernel::KernelProbe probe_;
  kernel::StateWatch watch_;
  kernel::Healer healer_;
  net::UniqueFd timer_;
};

}  // namespace quicstep::client::tun
