// Channel: the handshake channel's interface, of one of three kinds (DaemonSettings::
// channel_kind):
//   wireguard  an existing WireGuard interface (the lab's qsw-client; wg_config empty) or one
//              brought up from a wg-quick style config with wireguard-go + `wg setconf` (the
//              kernel here has no WireGuard), with its addresses and a default route in the
//              channel's routing table; its peers' endpoints are exempt;
//   interface  any layer-3 tunnel interface another program brings up (sing-box, Xray,
//              Hysteria2, openconnect...): the daemon adds only the default routes through it
//              in the channel's routing table; channel_exempt (the tunnel's servers) is
//              exempt;
//   tproxy     the user's proxy client's transparent-proxy port: the interface is `lo`, the
//              routed path's table routes channel packets to it and the nft chains hand them
//              to the proxy's socket (nft_rules.hpp); channel_exempt (the proxy's servers) is
//              exempt. Nothing to bring up or to remove.
// RAII: what attach() created, the destructor removes; cleanup() removes it after a crash
// (by the pid file in /run/quicstep; an interface channel's routes from its table).
// (The daemon loosens a strict IPv4 rp_filter on every device, the channel's included:
// kernel/reverse_path_filter.hpp.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <sys/types.h>

#include "client/core/policy_config.hpp"
#include "client/core/channel_health.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/udp_socket_watch.hpp"
#include "common/error.hpp"

namespace quicstep::client::daemon {

class Channel {
 public:
  Channel() = default;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel() { detach(); }

  // Brings up or checks the interface; adds its peers' endpoint addresses to spec's exempt
  // lists (WireGuard's own packets must never be marked into the tunnel), and with stateless
  // addressing the channel's DNS (DaemonSettings::channel_dns, else the wg-quick file's).
  // Errors: the interface is missing, the config cannot be read or is refused by `wg`,
  // wireguard-go does not start.
  common::Outcome attach(const core::DaemonSettings& settings, kernel::RulesetSpec* spec);
  // The interface was re-created under the daemon (another tool brought it down and up):
  // reads its endpoints and tunnel addresses into spec again (replacing the old ones).
  // Errors as attach's.
  common::Outcome reattach(kernel::RulesetSpec* spec);
  void detach();

  // Self-healing: the interface went down and came back (wg-quick down/up): the kernel
  // dropped its routes (and IPv6 addresses). Whether the daemon created it (then the routing
  // table's default routes and the config's addresses are the daemon's), and their restore.
  // Failure: the failing command.
  bool owns_routes() const { return created_ || routes_added_; }
  std::uint32_t routing_table() const { return routing_table_; }
  common::Outcome restore_routes();

  static void cleanup(const core::DaemonSettings& settings);

  // What the channel's state is read from, by kind (the daemon asks; it does not branch):
  // What logs and the status line call it: "channel interface qs-wg0", or "the proxy client
  // at port 1080".
  std::string describe() const;
  // Whether channel packets can go anywhere now: a device channel's device is up (the daemon
  // has seen it, `device_seen`); a tproxy channel's proxy client has a UDP socket at its port
  // (127.0.0.1 or ::1, or a wildcard address, looked up as the kernel would deliver a
  // datagram there; a lookup that fails counts as listening: the health reading still
  // judges).
  bool is_up(bool device_seen);
  // One reading for core::ChannelHealth: WireGuard's peers, a tunnel device's byte counters
  // (device_counters.hpp), or a tproxy channel's counters in the nft table `table`. Errors:
  // those readers'.
  common::Result<core::WireGuardReading, common::Failure> read_health(const std::string& table) const;

 private:
  common::Outcome bring_up(const core::DaemonSettings& settings);
  // An interface channel: its default routes in the channel's table (at least one family).
  common::Outcome add_routes(const core::DaemonSettings& settings);
  // dns_v4_/dns_v6_ from the settings or the file (logged), kept only with stateless
  // addressing.
  void choose_dns(const core::DaemonSettings& settings, bool stateless);
  // The peers' endpoints (exempt lists) and the tunnel addresses of the interface.
  common::Outcome read_facts(kernel::RulesetSpec* spec) const;

  std::string interface_;
  core::ChannelKind kind_ = core::ChannelKind::wireguard;
  std::vector<std::string> exempt_v4_, exempt_v6_;  // channel_exempt
  bool created_ = false;       // the WireGuard device is ours
  bool routes_added_ = false;  // an interface channel's default routes are ours
  pid_t wg_pid_ = -1;
  std::vector<std::string> addresses_;  // the config's Address entries (created only)
  // The wg-quick file's DNS addresses (brought up from one), and the channel's resolvers
  // the rules send DNS queries to (channel_dns, else the file's first of each family).
  std::vector<std::string> file_dns_v4_, file_dns_v6_;
  std::string dns_v4_, dns_v6_;
  std::uint32_t routing_table_ = 0;
  std::uint16_t tproxy_port_ = 0;
  kernel::UdpSocketWatch proxy_sockets_;  // tproxy: its lookup socket, opened by attach()
};

}  // namespace quicstep::client::daemon
