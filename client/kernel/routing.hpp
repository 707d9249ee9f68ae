// Policy routing of the channel: `ip rule`s that send packets carrying the channel marks to
// the channel's routing table, each followed by a fail-closed `unreachable` rule so that a
// missing WireGuard interface or route never lets a channel packet fall through to the main
// table (invariant 1). IPv4 and IPv6. Installed before the nft table, removed after it.
//
// The routed native path (RoutingSpec::routed, native_path = "routed"): rules select DNS and
// TCP by protocol and port for its own channel table (`routed_table`, whose default route
// through the channel names the native source address, so that a socket that connects
// through it keeps that address when its flow moves native), each followed by
// `unreachable`; the channel's endpoints and native_prefixes go to main before them (DNS to
// a native prefix still takes the channel), and last the QUIC ports likewise. With a device
// channel (`quic_channel_mark`) the host's own QUIC meets two rules before all of those:
// packets with that mark go to the channel table (then `unreachable`), and the rest of it
// (`iif lo`: sent by this host) to main. The routed nft table's route chain gives that mark
// to the packets of every flow *not* moved native (nft_rules.hpp): a moved flow's bulk is
// routed once, natively, after a short walk. What a forwarding host forwards still meets
// the port rules (fail closed without the nft table). Without the mark (a tproxy channel;
// the queue path's fail-closed lock) all QUIC is selected by port. Ahead of all of them, at
// `flow_priority`, one rule per family sends packets marked `native_mark` to main: moved
// flows selected by port (a tproxy channel's, forwarded ones; marked by the nft table's
// chains) and the lift datagrams' socket. One rule, whatever the number of flows (a rule
// per flow cost every route lookup ~17 ns per rule: 53x at 10,000 flows,
// tests/results/2026-12-04-rule-scale.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace quicstep::client::kernel {

struct RoutingSpec {
  std::vector<std::uint32_t> channel_marks;  // marks routed to the channel (value/mask)
  std::uint32_t mark_mask = 0xff;
  std::uint32_t table = 51820;
  std::uint32_t priority = 10100;  // first rule's priority; two per mark, consecutive

  bool routed = false;  // the routed native path: the rules below instead of the marks'
  std::uint32_t native_mark = 0x52;  // (value/mark_mask) a flow moved native: main
  std::uint32_t routed_table = 51821;
  std::vector<std::uint16_t> quic_ports = {443};
  // (value/mark_mask) A device channel's QUIC packets for the channel, marked by the nft
  // route chain; 0: QUIC is selected by port (a tproxy channel, the queue path's lock).
  std::uint32_t quic_channel_mark = 0;
  bool dns_to_channel = true;
  bool tcp_to_channel = true;
  std::vector<std::string> exempt_v4, exempt_v6;  // the channel's endpoints: main
  std::vector<std::string> native_v4, native_v6;  // native_prefixes: main (not DNS)
  // The routed path's native devices (with dns_to_channel, a device channel). A socket that
  // names one (IP_UNICAST_IF: systemd-resolved's sockets to a link's DNS servers;
  // SO_BINDTODEVICE) has its route looked up through that device only, and the channel's
  // table has no route there: IPv6 then refuses the query at connect() (ENETUNREACH; IPv4
  // assumes the server on the named link). So UDP DNS looked up through one of them takes
  // main (`ipproto udp dport 53 oif DEV lookup main`, with the exempt rules): the nft route
  // chain then routes the query again by the channel mark, which leaves the device out (a
  // socket bound to the device keeps it, and its query meets the guard).
  std::vector<std::string> bound_devices;
  // The channel route's source address per family (empty: that family has no channel
  // route, so its channel packets meet `unreachable`).
  std::string source_v4, source_v6;
  std::string channel_interface;
  // A tproxy channel: the channel route goes through lo (channel packets loop back to the
  // proxy client's socket, nft_rules.hpp), still with the native source address: `default
  // dev lo` for IPv4, `local default dev lo` for IPv6 (routed_channel_route).
  bool channel_local = false;
  // A tproxy channel on a forwarding host: the LAN's channel packets carry this mark (nft's
  // zone_forward chain, nft_rules.hpp) and are delivered locally to the proxy's socket: a
  // rule at `priority` to `table`, whose routes are `local default dev lo` (an IPv4 packet
  // that tproxy gave a socket is dropped when routed on). 0: none.
  std::uint32_t forwarded_mark = 0;

  // The native flows' rule's priority, then the routed rules' (flow_priority + 1 ..).
  std::uint32_t flow_priority() const { return priority + 20; }
  static constexpr std::uint32_t kRoutedPriorities = 14;  // flow rules included
};

// Whether two specs' rules select by different marks (the channel's, the native one, the
// mask, QUIC's channel mark): installed rules keep theirs, so a reload with other marks would
// leave the nft table's marks unmatched (a routed path's QUIC marked for a channel rule that
// is not there would take the main table, where the guard drops its handshakes).
bool routing_marks_differ(const RoutingSpec& a, const RoutingSpec& b);

// The routed table's channel route of `family` ("-4", "-6") with source `source`: `ip
// route replace [local] default dev IF src SOURCE table T` (`local` for a tproxy channel's
// IPv6 route), or with an empty source the `ip route del` of it.
std::vector<std::string> routed_channel_route(const RoutingSpec& spec, const char* family,
                                              const std::string& source);

// The routed table's routes (`ip route replace ...`) and rules, per family, in order.
std::vector<std::vector<std::string>> routed_routing_commands(const RoutingSpec& spec);

// The `ip rule` argument lists that install_routing runs, per family ("-4", "-6").
std::vector<std::vector<std::string>> routing_commands(const RoutingSpec& spec);

// The priorities that install_routing's rules of `family` ("-4", "-6") take, each with the
// number of rules there: what a check of the kernel's rules compares against.
std::vector<std::pair<std::uint32_t, int>> routing_rule_priorities(const RoutingSpec& spec,
                                                                   const char* family);

// Removes every rule at the priorities the spec uses (a crash may have left them, maybe
// twice). Never fails: rules that are absent are skipped. Returns how many were removed.
int remove_routing(const RoutingSpec& spec);

// RAII: installs the rules (after removing leftovers at the same priorities) and removes
// them in its destructor. install() errors: the failing command and its output; what was
// installed before the failure is removed.
class InstalledRouting {
 public:
  InstalledRouting() = default;
  InstalledRouting(const InstalledRouting&) = delete;
  InstalledRouting& operator=(const InstalledRouting&) = delete;
  ~InstalledRouting() { remove(); }

  // Failure: the failing command and its output.
  common::Outcome install(const RoutingSpec& spec);
  // Adds again the rules of the installed spec that are missing (another tool removed them),
  // leaving those still there in place: never a moment with fewer rules than before. Routes
  // are not touched. Failure: the first failing command and its output (the others are
  // still tried).
  common::Outcome restore_rules();
  // Adds a native device that appeared to the installed spec's bound_devices, and its rules
  // (none where the spec has none). Failure: as restore_rules.
  common::Outcome add_bound_device(const std::string& device);
  // Takes a device that went away out of bound_devices, and its rules (a host whose devices
  // come and go, a container's veth each, would otherwise gather rules that every route
  // lookup walks). Failure: a rule the kernel would not delete.
  common::Outcome remove_bound_device(const std::string& device);
  void remove();
  bool installed() const { return installed_; }
  const RoutingSpec& spec() const { return spec_; }

 private:
  RoutingSpec spec_;
  bool installed_ = false;
};

}  // namespace quicstep::client::kernel
