#include "client/daemon/specs.hpp"

#include <algorithm>
#include <chrono>

namespace quicstep::client::daemon {

using core::Addressing;
using core::Config;
using core::DaemonSettings;
using core::Policy;
using core::Route;
using core::tracks_native;
using kernel::check_spec;
using kernel::RoutingSpec;
using kernel::RulesetSpec;

common::Outcome derive_specs(const Config& config, RulesetSpec* r, RoutingSpec* routing) {
  const DaemonSettings& d = config.daemon;
  const Policy& p = config.policy;
  r->quic_ports = p.quic_ports;
  r->dns_to_channel = p.dns_to_channel;
  r->tcp_to_channel = p.tcp_to_channel;
  r->other_udp_to_channel = p.other_udp == Route::channel;
  r->other_protocols_to_channel = p.other_protocols == Route::channel;
  r->mark_mask = d.mark_mask;
  r->mark_channel = d.mark_channel;
  r->mark_native = d.mark_native;
  // The config names two marks; the queue marks are the next values within the mask.
  // (They route to the channel like mark_channel: a packet nobody decided is a channel one.)
  r->mark_decide_out = (d.mark_native + 1) & d.mark_mask;
  r->mark_decide_in = (d.mark_native + 2) & d.mark_mask;
  r->queue_outbound = d.queue_outbound;
  r->queue_inbound = d.queue_inbound;
  r->channel_interface = d.channel_interface;
  r->nat = d.addressing != Addressing::permissive;
  r->stateless = d.addressing == Addressing::stateless;
  r->track_native = tracks_native(d);
  r->gso_native_fast = d.native_gso_in_kernel;
  // Only where the server sees a new address after the switch and the channel's answers
  // arrive addressed to this host (nat's are un-NATed after the hook, so no RTT is seen;
  // permissive keeps the address: nothing to wait for).
  r->observe_handshakes = p.native_switch.enabled && p.watchdog.enabled &&
                          d.addressing == Addressing::stateless;
  r->native_v4 = d.native_prefixes_v4;
  r->native_v6 = d.native_prefixes_v6;
  r->set_size = static_cast<std::uint32_t>(std::min<std::size_t>(p.flows.capacity, 1u << 20));
  r->native_timeout = std::chrono::duration_cast<std::chrono::seconds>(p.flows.idle_timeout);
  // A watched flow may stay pending past max_timeout (quiet at the bound, classifier.hpp):
  // its answers must reach the classifier until it forgets the flow (idle_timeout).
  r->watch_timeout = std::max(
      r->native_timeout,
      std::chrono::seconds(
          1 + std::chrono::duration_cast<std::chrono::seconds>(p.watchdog.max_timeout).count()));
  routing->channel_marks = {r->mark_channel, r->mark_decide_out};
  routing->mark_mask = d.mark_mask;
  routing->native_mark = r->mark_native;
  routing->table = d.routing_table;
  // The routed native path: no queue; the channel's copies go to one log group; one mark,
  // mark_native, for the flows it moved native.
  r->routed = routing->routed = d.native_path_routed;
  r->log_group = d.queue_outbound;
  r->switch_hold = r->routed && p.native_switch.enabled && p.native_switch.hold &&
                   p.watchdog.enabled;
  routing->routed_table = d.routed_table;
  routing->quic_ports = p.quic_ports;
  routing->dns_to_channel = p.dns_to_channel;
  routing->tcp_to_channel = p.tcp_to_channel;
  routing->native_v4 = d.native_prefixes_v4;
  routing->native_v6 = d.native_prefixes_v6;
  routing->channel_interface = d.channel_interface;
  // A device channel: QUIC routed natively, the flows not moved marked for the channel.
  if (d.native_path_routed && d.channel_kind != core::ChannelKind::tproxy) {
    routing->quic_channel_mark = r->mark_channel;
  }
  if (d.channel_kind == core::ChannelKind::tproxy) {
    // The proxy client sends: no addressing of the daemon's; channel packets go to lo.
    r->tproxy_port = d.tproxy_port;
    r->nat = r->stateless = false;
    routing->channel_local = true;
    routing->forwarded_mark = r->mark_channel;  // a LAN host's channel packets (forwarding)
    if (!d.native_path_routed) {
      return common::Failure("channel_kind = \"tproxy\" works with the routed native path "
                             "only");
    }
  }
  if (d.native_path_routed &&
      (p.other_udp == Route::channel || p.other_protocols == Route::channel)) {
    return common::Failure(
        "native_path = \"routed\" sends only DNS, TCP and QUIC to the channel: set "
        "other_udp and other_protocols to \"native\"");
  }
  if (d.queue_outbound == d.queue_inbound) {
    return common::Failure("queue_outbound and queue_inbound must differ");
  }
  return check_spec(*r);
}

}  // namespace quicstep::client::daemon
