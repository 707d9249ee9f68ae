// Policy: what the classifier decides, as a plain struct with defaults (docs/DESIGN.md "The
// classifier"). Passed explicitly to the Classifier; no globals. policy_config.hpp loads it
// from TOML and checks every range; the Classifier takes it as given.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/timestamp.hpp"

namespace quicstep::client::core {

using common::Duration;
using namespace std::chrono_literals;

// Where a packet that needs no QUIC decision goes.
enum class Route : std::uint8_t { channel, native };

// Keep a flow's first short-header packets on the channel until the handshake is likely
// confirmed (a server may not accept a new path before HANDSHAKE_DONE, RFC 9000 §9). The
// hold lasts while EITHER bound still holds; both zero turns it off.
struct HoldPolicy {
  // Outbound short-header packets of a flow that stay on the channel (0: no count hold).
  std::uint32_t packets = 0;
  // Time from the flow's first outbound packet the classifier saw during which its short
  // headers stay on the channel (0: no time hold).
  Duration time = Duration::zero();

  bool enabled() const { return packets != 0 || time != Duration::zero(); }
};

// The native switch: when a flow moves to the native path, its short headers wait in the
// queue (the frontend defers their verdicts) until the client's Finished — its last long
// header, sent on the channel just before — has likely reached the server, and then go
// native in order. A native short header that overtakes the Finished reaches the server
// from a new address before its handshake is complete, and servers drop such packets
// (RFC 9000 §9: no migration before the handshake is confirmed), which costs the
// connection a loss recovery. Unlike a hold, nothing of the flow goes on the channel after
// its first short header, so channel and native packets never interleave.
//
// The wait ends rtt_percent of the handshake RTT (over the channel) after the flow's last
// outbound long header, at least min_delay after it, at most max_delay; with no RTT
// sample (no handshake seen), unknown_rtt_delay after the move. Packets sent later than
// that (a download's ACKs come a round trip after the Finished) do not wait at all.
// Needs the watchdog (a moved flow is queued until its first answer on the native path).
struct NativeSwitchPolicy {
  bool enabled = true;
  // A one-way trip on the channel is about half its RTT; the native one-way is not known.
  std::uint32_t rtt_percent = 50;
  // Scheduling jitter between the channel's process (wireguard-go) and the native path.
  Duration min_delay = 1ms;
  Duration max_delay = 100ms;
  Duration unknown_rtt_delay = Duration::zero();
  // The routed native path (a device channel): a flow's short headers wait for its switch
  // in a netfilter queue (queue_outbound), from its first, as the queue path holds them,
  // instead of taking the channel until it: the server then sees the flow's 1-RTT packets
  // from the native address from the first on, and never migrates it mid-transfer. Side by
  // side (client/results/2026-12-06-switch-hold.md): a connection's fixed cost on the lab's
  // fast path, upload 35-51 ms against 140-160 without; over london-ohio, download 663
  // against 736 ms, upload 679 against 637 (the wait, ~RTT/2). It holds the request too:
  // the first byte comes later (as on the queue path). Off: page loads stay as the report
  // measured them until they are measured with it.
  bool hold = false;
  // Bytes of lift datagrams sent after a moved flow's first native packet, credit for the
  // server's anti-amplification limit while it validates the new path
  // (kernel/lift_datagrams.hpp; routed path). 0: none, the default. Measured with
  // move_cost.py (client/README, "What the move costs"): sent at once, the credit lets
  // ngtcp2 send ~9.5 KB while validating, paced at its reset RTT estimate (333 ms), and the
  // pacer then holds the connection ~180 ms: loads got slower. An experiment, off.
  std::uint32_t lift_bytes = 0;
  // How long after the watch poll that first saw the flow's native packets the lift
  // datagrams leave (the polls are 20 ms apart): time for the client's next ACKs to give
  // the server an RTT sample on the new path before the credit arrives.
  Duration lift_delay = Duration::zero();
};

// The migration watchdog: a flow moved to the native path must get an inbound packet on the
// native path within clamp(rtt_multiplier × RTT, min_timeout, max_timeout) (the bound), or
// it returns to the channel for good and its destination enters the non-migrating cache,
// but only on evidence: by the bound or later, the client has sent at least
// min_unanswered_packets short headers natively (a client whose new path is ignored keeps
// sending: ACKs, retransmissions, PTO probes), or an answer came on the channel after the
// bound (a server answering the old address). A flow that falls quiet (its transfer ended
// during the hold, a lone trailing ACK or CONNECTION_CLOSE) is never judged.
struct WatchdogPolicy {
  // Off: flows moved native are never watched (and never return to the channel).
  bool enabled = true;
  // How many handshake RTTs the server gets to answer on the new path (path validation
  // takes one RTT; 3 leaves room for a lost PATH_CHALLENGE and server-side pacing).
  std::uint32_t rtt_multiplier = 3;
  // Lower bound: RTT estimates of a few ms must not fail flows on scheduling jitter.
  Duration min_timeout = 200ms;
  // Upper bound: a stalled connection waits at most this long before it falls back.
  Duration max_timeout = 3s;
  // RTT assumed when the classifier saw no handshake (a flow older than the daemon, or the
  // native switch off: then the kernel sends long headers to the channel without asking).
  Duration unknown_rtt = 200ms;
  // Native short headers without an answer that make the evidence (see above). 1 restores
  // the old rule (any flow unanswered at the bound fails), which misjudges quiet flows.
  std::uint32_t min_unanswered_packets = 3;
};

// The bounded cache of destinations known not to support migration (learnt by the
// watchdog, or preloaded from the prober's results).
struct DestinationCachePolicy {
  // Destinations remembered at most; the least recently used is evicted beyond that.
  std::size_t capacity = 4096;
  // How long a destination stays known as non-migrating (servers get fixed, addresses move),
  // and how long a watchdog strike is remembered.
  Duration ttl = std::chrono::hours(24);
  // A watchdog failure blocks the destination for first_penalty, doubled on each further
  // failure while the earlier one is remembered, up to ttl (10 min, 20, 40, ... 24 h). A
  // preloaded destination (the prober's verdict) is blocked for ttl at once.
  Duration first_penalty = std::chrono::minutes(10);
};

// The bounded table of QUIC flows (UDP to a QUIC port) the classifier tracks.
struct FlowTablePolicy {
  // Flows tracked at most; the least recently used is evicted beyond that (invariant 4).
  std::size_t capacity = 65536;
  // A flow with no packet for this long is forgotten (QUIC's default idle timeouts are
  // 30 s in most stacks; 2 min leaves room for longer ones).
  Duration idle_timeout = 120s;
};

// Not configurable, because they are what invariant 1 rests on: QUIC long headers and
// anything unparseable on a QUIC port always go to the channel, and only a QUIC short header
// on a QUIC port is ever a candidate for the native path among UDP to QUIC ports.
struct Policy {
  // UDP destination ports whose traffic is QUIC (add 853 for DNS over QUIC, 8443, ...).
  // At most kMaxQuicPorts entries; 0 is not a port.
  std::vector<std::uint16_t> quic_ports = {443};
  // DNS (UDP or TCP, either port 53) goes to the channel: queries carry names.
  bool dns_to_channel = true;
  // All TCP goes to the channel: a TLS ClientHello carries the SNI in clear.
  bool tcp_to_channel = true;
  // UDP to ports that are neither QUIC nor DNS. Default native: the kernel rules of the
  // nfqueue frontend only steer DNS, TCP and QUIC ports, so this keeps the classifier and
  // the rules in agreement; such traffic (games, VoIP, WebRTC media, VPNs) carries no DNS
  // name or TLS SNI that this project protects, and its volume would load the channel.
  // The price: QUIC to a port not listed in quic_ports (HTTP/3 on 8443 via Alt-Svc, DNS
  // over QUIC on 853) is not protected; list such ports, or choose channel here.
  Route other_udp = Route::native;
  // IP protocols other than UDP and TCP (ICMP, ESP, GRE, ...). Default native, for the
  // same reasons as other_udp (they take the ordinary route in the kernel rules).
  Route other_protocols = Route::native;
  HoldPolicy hold;
  NativeSwitchPolicy native_switch;
  WatchdogPolicy watchdog;
  DestinationCachePolicy destinations;
  FlowTablePolicy flows;
  // Flow events (moved native, confirmed, failed back, forgotten) buffered for the
  // frontend between two drains; beyond that they are counted as lost.
  std::size_t event_capacity = 4096;
};

inline constexpr std::size_t kMaxQuicPorts = 64;

}  // namespace quicstep::client::core
