// FlowTable: the bounded table of QUIC flows the classifier tracks, keyed by FlowKey in
// outbound orientation (client = this host, server = the remote QUIC endpoint).
//
// Bounded (invariant 4): at most `capacity` flows; a new flow evicts the least recently used
// one, and flows idle for `idle_timeout` are forgotten. Both hand the removed entry back to
// the caller, who must undo what it knows about the flow (watchdog, frontend sets). All
// memory is allocated by the constructor; nothing on the packet path allocates.
//
// LRU order is kept at a granularity of kTouchGranularity: a flow seen again within that
// time of its last relink stays in place, which saves most list writes at millions of
// packets per second. Idle expiry re-checks the real last_seen, so no live flow expires.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "client/lru_table.hpp"
#include "common/flow_key.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client {

using common::Duration;
using common::FlowKey;
using common::Timestamp;

// Where a QUIC flow is in its life (see classifier.hpp for the transitions).
enum class FlowState : std::uint8_t {
  handshake,         // long headers seen, no short header yet: channel
  held,              // short headers kept on the channel by the hold policy
  native_pending,    // moved to the native path; the watchdog waits for an answer there
  native_confirmed,  // an inbound packet arrived on the native path: native for good
  pinned_channel,    // its destination is known not to migrate: channel for good
  failed,            // the watchdog expired: back on the channel for good
};

std::string_view to_string(FlowState state);

struct FlowEntry {
  FlowState state = FlowState::handshake;
  bool announced = false;  // an event about this flow reached the frontend's queue
  std::uint32_t heap_slot = 0xffffffffu;  // the watchdog's bookkeeping (DeadlineHeap)
  std::uint32_t short_packets = 0;        // outbound short headers seen
  Timestamp first_seen;                   // first packet the classifier saw
  Timestamp last_seen;                    // last packet, either direction
  Timestamp linked;                       // last LRU relink (<= last_seen)
  Timestamp first_long_out;               // first outbound long header (0 if none seen)
  Timestamp moved_native;                 // when it moved to the native path
  Timestamp deadline;                     // native_pending: the watchdog's deadline
  Duration rtt = Duration::zero();        // handshake RTT estimate (0: unknown)
  std::uint64_t channel_packets = 0, channel_bytes = 0;  // outbound, this flow
  std::uint64_t native_packets = 0, native_bytes = 0;
  std::uint64_t inbound_packets = 0, inbound_bytes = 0;
};

// A fast, seeded hash of a FlowKey: five 64-bit words mixed by multiplication. The seed
// (random in the daemon) keeps remote parties from aiming at collisions cheaply.
struct FlowKeyFastHash {
  std::uint64_t seed = 0x9e3779b97f4a7c15ull;
  std::uint64_t operator()(const FlowKey& key) const noexcept;
};

class FlowTable {
 public:
  using Handle = std::uint32_t;
  static constexpr Handle npos = 0xffffffffu;
  static constexpr Duration kTouchGranularity = std::chrono::milliseconds(100);

  // Precondition: 1 <= capacity <= 2^30, idle_timeout > 0. Allocates all memory.
  FlowTable(std::size_t capacity, Duration idle_timeout, std::uint64_t seed = 0);

  std::size_t size() const { return table_.size(); }
  std::size_t capacity() const { return table_.capacity(); }

  // The flow of `key`, or npos. Does not touch it.
  Handle find(const FlowKey& key) const { return table_.find(key); }

  // Records a packet of flow `h` at `now`: last_seen, and LRU order (see above).
  void touch(Handle h, Timestamp now);

  // Inserts a new flow (precondition: find(key) == npos), first_seen = last_seen = now.
  // When full, first evicts the least recently used flow into *evicted (its key and
  // entry) and sets *did_evict; the caller undoes its bookkeeping for it.
  Handle insert(const FlowKey& key, Timestamp now, FlowKey* evicted_key, FlowEntry* evicted,
                bool* did_evict);

  // When the oldest flow becomes idle (Timestamp max when empty). May be early: a flow
  // touched within the granularity expires only after its real last_seen + idle_timeout.
  Timestamp next_idle_expiry() const;

  // Removes one flow idle at `now` into *key/*entry and returns true, or returns false
  // when no flow is idle. Call in a loop.
  bool pop_idle(Timestamp now, FlowKey* key, FlowEntry* entry);

  void erase(Handle h) { table_.erase(h); }

  const FlowKey& key(Handle h) const { return table_.key(h); }
  FlowEntry& entry(Handle h) { return table_.value(h); }
  const FlowEntry& entry(Handle h) const { return table_.value(h); }

  // Iteration from the most to the least recently used flow (granularity applies).
  Handle newest() const { return table_.newest(); }
  Handle older(Handle h) const { return table_.older(h); }

 private:
  LruTable<FlowKey, FlowEntry, FlowKeyFastHash> table_;
  Duration idle_timeout_;
};

}  // namespace quicstep::client
