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
#include <cstring>
#include <string_view>
#include <type_traits>

#include "common/flow_key.hpp"
#include "common/lru_table.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::core {

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

// Hot fields first: a short header of an established flow reads the key (in the table's
// slot, just before) and the first of these, so that one or two cache lines serve it.
struct FlowEntry {
  FlowState state = FlowState::handshake;
  bool announced = false;      // an event about this flow was queued for the frontend
  bool seen_long_out = false;  // first_long_out is set
  std::uint32_t short_packets = 0;  // outbound short headers seen
  Timestamp last_seen;              // last packet, either direction
  Timestamp linked;                 // last LRU relink (<= last_seen)
  Timestamp deadline;               // native_pending: the watchdog's deadline
  std::uint64_t native_packets = 0, native_bytes = 0;  // outbound, this flow
  std::uint64_t channel_packets = 0, channel_bytes = 0;
  std::uint64_t inbound_packets = 0, inbound_bytes = 0;
  Timestamp first_seen;                   // first packet the classifier saw
  Timestamp first_long_out;               // first outbound long header (seen_long_out)
  Timestamp moved_native;                 // when it moved to the native path
  Duration rtt = Duration::zero();        // handshake RTT estimate (0: unknown)
  Timestamp last_long_out;                // last outbound long header (seen_long_out)
  Timestamp switch_end;                   // native_pending: its packets wait until then
};

namespace detail {
// A FlowKey's meaningful bytes are 0..38: client {family, 16 bytes}, server {family, 16
// bytes}, two ports and the protocol; byte 39 is padding, never read. Five overlapping
// 64-bit loads (at 0, 8, 16, 24, 31) cover exactly bytes 0..38, so hashing and comparing
// need no per-field work. IpAddress keeps its unused bytes zero (ip_packet.hpp), so equal
// keys have equal bytes.
static_assert(std::is_standard_layout_v<FlowKey> && std::is_trivially_copyable_v<FlowKey>);
static_assert(sizeof(FlowKey) == 40 && offsetof(FlowKey, protocol) == 38,
              "FlowKey's layout changed: update the word loads below");
inline constexpr std::size_t kKeyWordOffsets[5] = {0, 8, 16, 24, 31};

inline std::uint64_t key_word(const FlowKey& k, std::size_t i) {
  std::uint64_t v;
  std::memcpy(&v, reinterpret_cast<const unsigned char*>(&k) + kKeyWordOffsets[i], sizeof v);
  return v;
}
// wyhash's mixing step: the 128-bit product of two words, folded.
inline std::uint64_t mum(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}
}  // namespace detail

// A fast, seeded hash of a FlowKey: wyhash-style multiply-folds of its five words, three
// independent products that run in parallel. The seed (random in the daemon) keeps remote
// parties from aiming at collisions cheaply. Inline: it is on every packet's path.
struct FlowKeyFastHash {
  std::uint64_t seed = 0x9e3779b97f4a7c15ull;
  std::uint64_t operator()(const FlowKey& k) const noexcept {
    using detail::key_word;
    using detail::mum;
    const std::uint64_t h = mum(key_word(k, 0) ^ seed, key_word(k, 1) ^ 0xe7037ed1a0b428dbull) ^
                            mum(key_word(k, 2) ^ 0x8ebc6af09c88c6e3ull, key_word(k, 3) ^ seed) ^
                            mum(key_word(k, 4) ^ 0x589965cc75374cc3ull,
                                seed ^ 0x1d8e4e27c47d124full);
    return mum(h, 0xa0761d6478bd642full);
  }
};

// FlowKey equality by its five words: the same as operator== (see above).
struct FlowKeyFastEq {
  bool operator()(const FlowKey& a, const FlowKey& b) const noexcept {
    using detail::key_word;
    return ((key_word(a, 0) ^ key_word(b, 0)) | (key_word(a, 1) ^ key_word(b, 1)) |
            (key_word(a, 2) ^ key_word(b, 2)) | (key_word(a, 3) ^ key_word(b, 3)) |
            (key_word(a, 4) ^ key_word(b, 4))) == 0;
  }
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
  void touch(Handle h, Timestamp now) {
    FlowEntry& e = table_.value(h);
    e.last_seen = now;
    if (now - e.linked >= kTouchGranularity) {
      e.linked = now;
      table_.touch(h);
    }
  }

  bool full() const { return table_.full(); }

  // The least recently used flow (npos when empty): the one to evict when full().
  Handle oldest() const { return table_.oldest(); }

  // Inserts a new flow (precondition: find(key) == npos) with first_seen = last_seen = now.
  // Returns npos, inserting nothing, when full(): the caller evicts oldest() first, after
  // undoing its own bookkeeping for it (watchdog, frontend state).
  Handle insert(const FlowKey& key, Timestamp now);

  // When the oldest flow may become idle (Timestamp max when empty). May be early: see
  // find_idle().
  Timestamp next_idle_expiry() const;

  // A flow with no packet since now - idle_timeout, or npos. The caller erases it, and
  // calls again until npos. A flow expires between idle_timeout and idle_timeout +
  // kTouchGranularity after its last packet (the LRU granularity above).
  Handle find_idle(Timestamp now);

  void erase(Handle h) { table_.erase(h); }

  const FlowKey& key(Handle h) const { return table_.key(h); }
  FlowEntry& entry(Handle h) { return table_.value(h); }
  const FlowEntry& entry(Handle h) const { return table_.value(h); }

  // Iteration from the most to the least recently used flow (granularity applies).
  Handle newest() const { return table_.newest(); }
  Handle older(Handle h) const { return table_.older(h); }

 private:
  common::LruTable<FlowKey, FlowEntry, FlowKeyFastHash, FlowKeyFastEq> table_;
  Duration idle_timeout_;
};

}  // namespace quicstep::client::core
