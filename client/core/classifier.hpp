// Classifier: the heart of quicstepd (docs/DESIGN.md "The classifier"). A sans-IO decision
// function: (packet bytes, direction, time, flow state, policy) -> {channel, native, drop},
// plus flow-state updates. No I/O, no clock, no exceptions, no allocation after
// construction; the frontends (nfqueue, TUN) pass the time in and act on the decision.
//
// Outbound decisions, in order (Reason in brackets):
//   not an IPv4/IPv6 packet we can parse           -> channel [not_ip]
//   UDP or TCP fragment (no port, or no header)     -> channel [fragment]
//   UDP/TCP with port 53 on either side             -> channel [dns]     (dns_to_channel)
//   TCP                                             -> channel [tcp]     (tcp_to_channel)
//   UDP to a QUIC port, empty or a short header too
//     short to be a protected QUIC packet           -> channel [quic_unparseable]
//   UDP to a QUIC port, long header (first bit 1)   -> channel [quic_long_header]
//   UDP to a QUIC port, short header: by flow state:
//     destination in the non-migrating cache        -> channel [destination_non_migrating]
//     within the hold                               -> channel [hold]
//     watchdog expired                              -> channel [migration_failed]
//     otherwise                                     -> native  [quic_short_native]
//       (just after the move: native, not before the native switch's end, policy.hpp)
//   other UDP                                       -> policy.other_udp [other_udp]
//   other IP protocols                              -> policy.other_protocols [other_protocol]
// Invariant 1, tested as a property: with other_udp and other_protocols set to channel,
// `native` is returned for an outbound packet only if it is an unfragmented UDP datagram to
// a QUIC port whose first payload byte has the long-header bit clear.
//
// Packets are read by packet_facts.hpp: a bounds-checked fast path for the common shapes,
// the wire library's full parser for everything else (fragments, options, extension chains).
//
// Inbound packets are always accepted (Path::native means "accept"); they feed the flow
// state: the first inbound long header gives the handshake RTT (from the first outbound
// one), and an inbound_native packet of a native_pending flow confirms its migration.
//
// Flow lifecycle (FlowState): handshake -> [held] -> native_pending -> native_confirmed,
// or native_pending -> failed when no inbound_native packet arrives within the bound
// clamp(rtt_multiplier x RTT, min_timeout, max_timeout) of the move AND there is evidence:
// at least watchdog.min_unanswered_packets outbound native short headers by then (at the
// bound, or at the packet after it that completes the count; that packet goes to the
// channel), or an inbound_channel packet after the bound (a stale-path server). A flow
// quiet at the bound (fewer packets: its transfer ended, a lone trailing ACK or
// CONNECTION_CLOSE) is not judged: it stays native_pending, untimed, until more packets or
// an answer decide. A failed destination enters the non-migrating cache (a short, escalating
// penalty, destination_cache.hpp), and new flows to it go pinned_channel.
// The frontend must keep passing a native_pending flow's outbound packets to classify()
// (the evidence is counted there) and, if it can, its inbound channel packets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "client/core/destination_cache.hpp"
#include "client/core/flow_table.hpp"
#include "client/core/packet_facts.hpp"
#include "client/core/policy.hpp"
#include "client/core/preferred_addresses.hpp"
#include "common/byte_reader.hpp"
#include "common/deadline_heap.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::client::core {

using common::Bytes;

// Which way a packet travels; for inbound, which interface it arrived on. outbound_copy: an
// outbound packet seen as a copy on its way through the channel (the routed path's log
// copies): decided as an outbound one, but it took the channel whatever the decision, so it
// is counted there and is no evidence of an unanswered native packet (copies made before a
// moved flow's element took effect, counted as native, failed a quiet LAN flow that its
// server had answered).
enum class Direction : std::uint8_t { outbound, inbound_native, inbound_channel, outbound_copy };

// Where the packet goes. Inbound: native = accept. drop is never returned by this policy;
// it is part of the vocabulary for frontends and future policies.
enum class Path : std::uint8_t { channel, native, drop };
inline constexpr std::size_t kPathCount = 3;

enum class Reason : std::uint8_t {
  not_ip,                     // unparseable IP packet
  fragment,                   // UDP or TCP fragment
  dns,                        // port 53
  tcp,                        // TCP
  quic_long_header,           // UDP to a QUIC port, long header
  quic_unparseable,           // UDP to a QUIC port, not a plausible QUIC packet
  quic_short_native,          // short header moved / kept native
  hold,                       // short header kept on the channel by the hold
  destination_non_migrating,  // short header of a flow to a non-migrating destination
  migration_failed,           // short header of a flow whose migration failed
  other_udp,                  // UDP to a port that is neither QUIC nor DNS
  other_protocol,             // neither UDP nor TCP
  inbound,                    // an inbound packet (accepted)
  migration_confirmed,        // an inbound_native packet that confirmed a migration
};
inline constexpr std::size_t kReasonCount = 14;

std::string_view to_string(Direction d);
std::string_view to_string(Path p);
std::string_view to_string(Reason r);

struct Decision {
  Path path = Path::channel;
  Reason reason = Reason::not_ip;
  // Native short headers of a native_pending flow: the packet must not leave before this
  // time (the end of its flow's native switch, NativeSwitchPolicy; in the past once over).
  // The frontend defers the verdict until then, and releases deferred packets in order
  // before any later packet whose not_before has passed. Zero otherwise.
  Timestamp not_before{};
  friend bool operator==(const Decision&, const Decision&) = default;
};

// What the frontend needs to keep kernel state (e.g. nft sets) in step with the flows.
struct FlowEvent {
  enum class Kind : std::uint8_t {
    moved_native,  // now native_pending: start passing its inbound native packets to us
    confirmed,     // native for good: stop watching its inbound packets
    failed_back,   // back on the channel for good: stop watching, and may be steered there
    forgotten,     // evicted or idle: drop any kernel state of this flow
  };
  Kind kind = Kind::moved_native;
  FlowKey flow;
  Timestamp at;
};
std::string_view to_string(FlowEvent::Kind k);

struct PathCounters {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;  // IP packet bytes
};

struct Counters {
  std::array<PathCounters, kPathCount> outbound{};  // by Path
  PathCounters inbound_native;
  PathCounters inbound_channel;
  std::array<std::uint64_t, kReasonCount> reasons{};  // packets, both directions
  std::uint64_t flows_created = 0;
  std::uint64_t flows_evicted = 0;  // by capacity
  std::uint64_t flows_expired = 0;  // idle
  std::uint64_t flows_closed = 0;   // forgotten because their socket closed (forget())
  std::uint64_t moved_native = 0;
  std::uint64_t confirmed = 0;
  std::uint64_t failed_back = 0;          // watchdog failures (flows back on the channel)
  std::uint64_t quiet_at_bound = 0;       // unanswered at the bound, too few packets to judge
  std::uint64_t pinned_by_cache = 0;      // flows kept on the channel by the cache
  std::uint64_t preferred_address_moves = 0;       // clients seen moving to a preferred address
  std::uint64_t preferred_address_after_move = 0;  // ... from a flow moved native before
  std::uint64_t held_for_preferred_address = 0;    // flows held until their client moves
  std::uint64_t pending_forgotten = 0;    // native_pending flows evicted or idle
  std::uint64_t rtt_samples = 0;
  std::uint64_t switch_waits = 0;         // moved flows whose first native packets waited
  std::uint64_t switch_wait_ns = 0;       // the sum of those waits
  std::uint64_t events_lost = 0;          // the event queue was full
};

// One flow, for `quicstepctl flows`.
struct FlowInfo {
  FlowKey key;
  FlowEntry entry;
};

class Classifier {
 public:
  // Allocates the flow table, the destination cache, the watchdog heap and the event
  // queue. Expects a policy within the ranges parse_config() enforces (the defaults are);
  // capacities of 0 are raised to 1, and watchdog bounds stay defined whatever they are.
  // `seed` randomises the hash tables (pass random bits in the daemon, 0 in tests).
  explicit Classifier(const Policy& policy, std::uint64_t seed = 0);

  // Applies a reloaded policy (SIGHUP) and keeps every flow, its timer and the cache.
  // Returns false, changing nothing, when a capacity, the idle timeout or the cache TTL
  // differs: those size or shape the tables, so the caller builds a new Classifier (and
  // treats every announced flow as forgotten). Allocates: not for the packet path. New
  // hold and watchdog settings apply to flows from their next transition on.
  bool update_policy(const Policy& policy);

  // Decides one packet. Never fails, never allocates; `now` should not go backwards.
  Decision classify(Bytes ip_packet, Direction dir, Timestamp now);

  // The earliest time on_expiry() has work (a watchdog deadline, an idle flow), or
  // Timestamp max. The frontend arms one timer for it.
  Timestamp next_expiry() const;
  // Fails the native_pending flows whose deadline is <= now; forgets idle flows.
  void on_expiry(Timestamp now);

  // For a frontend whose native packets bypass it (the routed native path: a tc guard counts
  // a watched flow's packets in the kernel): `sent` more outbound native packets of `flow`
  // since the last report, and when its first native answer arrived (zero: none yet). Keeps
  // the flow alive (an idle flow is forgotten), counts the packets as evidence, and an answer
  // judges a native_pending flow as an inbound_native short header would at `answered_at`
  // (confirmed, or failed if it came past the bound with the evidence in). Report before
  // on_expiry() at a deadline.
  void native_report(const FlowKey& flow, std::uint64_t sent, Timestamp answered_at,
                     Timestamp now);

  // The socket that carried `flow` is gone (the routed path learns it from the kernel): the
  // flow is forgotten now (a `forgotten` event if announced), so that a new connection on
  // the same ports starts afresh, handshake and native switch included. Returns whether the
  // flow was tracked.
  bool forget(const FlowKey& flow, Timestamp now);

  // Whether the frontend should pass this flow's inbound native packets (native_pending).
  // Flow keys here and in FlowEvent are in outbound orientation: client = this host
  // (FlowKey::from_client of an outbound packet, FlowKey::from_server of an inbound one).
  bool needs_inbound_watch(const FlowKey& flow) const;

  // Moves up to out.size() queued events, oldest first, into `out`; returns how many.
  std::size_t drain_events(std::span<FlowEvent> out);
  std::size_t pending_events() const { return event_count_; }

  const Counters& counters() const { return counters_; }
  const Policy& policy() const { return policy_; }
  std::size_t flow_count() const { return flows_.size(); }
  // Up to `limit` flows, most recently used first. Allocates: not for the packet path.
  std::vector<FlowInfo> flows(std::size_t limit) const;
  // The flow state of `flow`, if tracked.
  const FlowEntry* find_flow(const FlowKey& flow) const;

  // The servers known to move their clients to a preferred address.
  const PreferredAddresses& preferred_addresses() const { return preferred_; }
  // The non-migrating cache, for preloading and inspection.
  DestinationCache& destinations() { return destinations_; }
  const DestinationCache& destinations() const { return destinations_; }

  // Whether `port` is one of the policy's QUIC ports.
  bool is_quic_port(std::uint16_t port) const {
    return (quic_ports_[port >> 6] >> (port & 63)) & 1;
  }

 private:
  using Handle = FlowTable::Handle;

  Decision outbound(const PacketFacts& p, Timestamp now);
  Decision outbound_quic(const PacketFacts& p, Timestamp now);
  Decision short_header(Handle h, const FlowKey& key, Timestamp now);
  Decision short_header_transition(Handle h, const FlowKey& key, Timestamp now);
  // When a flow moved at `now` may send natively (NativeSwitchPolicy); zero: at once.
  Timestamp native_switch_end(const FlowEntry& e, Timestamp now) const;
  void inbound(const PacketFacts& p, Direction dir, Timestamp now, Decision* d);
  Handle find_or_create(const FlowKey& key, Timestamp now);
  void move_native(Handle h, const FlowKey& key, Timestamp now);
  void client_moved(const FlowKey& key, Timestamp now);
  Timestamp preferred_address_hold_end(const FlowEntry& e) const;
  void fail(Handle h, const FlowKey& key, Timestamp now);
  // A native_pending flow answered natively: confirmed, or failed if the answer is too late.
  // Returns whether it was confirmed.
  bool judge_answer(Handle h, const FlowKey& key, Timestamp now);
  void drop_flow(Handle h, Timestamp now);
  void push_event(FlowEvent::Kind kind, const FlowKey& key, Timestamp now, FlowEntry* entry);
  Duration watchdog_bound(const FlowEntry& e) const;
  bool has_evidence(const FlowEntry& e) const;
  void set_quic_ports();
  void count(FlowEntry* entry, Decision d, Direction dir, std::size_t bytes);

  Policy policy_;
  std::array<std::uint64_t, 1024> quic_ports_{};  // a bitset of 65536 ports
  FlowTable flows_;
  DestinationCache destinations_;
  PreferredAddresses preferred_;
  common::DenseDeadlineHeap deadlines_;
  std::vector<FlowEvent> events_;  // a ring of policy.event_capacity
  std::size_t event_head_ = 0;
  std::size_t event_count_ = 0;
  Counters counters_;
  FlowEntry* counted_flow_ = nullptr;  // the flow of the packet being decided
};

}  // namespace quicstep::client::core
