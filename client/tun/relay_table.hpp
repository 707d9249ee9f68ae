// RelayTable: the TUN engine's native relays (docs/DESIGN.md "The TUN engine"). A flow that
// the classifier moves native gets a relay: a protected UDP socket of its own, connected to
// the flow's server, from which its short headers leave and on which the server's answers
// come back. This table is the sans-IO half: it maps a flow to a RelayId (a small integer
// the adapter maps to its socket) and back, and says when a relay has been idle too long.
// It opens and closes nothing; the engine tells the adapter what to do.
//
// Bounded (invariant 4): all memory is allocated by the constructor. When full, the least
// recently used relay is evicted to make room (the caller closes its socket; the flow, if
// it goes on, gets a new relay and the server sees one more address change).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "client/core/flow_table.hpp"
#include "common/flow_key.hpp"
#include "common/lru_table.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::tun {

using common::Duration;
using common::FlowKey;
using common::Timestamp;

using RelayId = std::uint32_t;
inline constexpr RelayId kNoRelay = 0xffffffffu;

struct RelayCounters {
  std::uint64_t tx_packets = 0;  // datagrams sent natively
  std::uint64_t tx_bytes = 0;    // their UDP payload bytes
  std::uint64_t rx_packets = 0;  // datagrams the server sent back natively
  std::uint64_t rx_bytes = 0;
};

struct Relay {
  Timestamp opened{};
  Timestamp last_used{};
  RelayCounters counters;
};

class RelayTable {
 public:
  // Precondition: 1 <= capacity <= 2^30, idle > 0. `seed` randomises the hash.
  RelayTable(std::size_t capacity, Duration idle, std::uint64_t seed = 0);

  std::size_t size() const { return table_.size(); }
  std::size_t capacity() const { return table_.capacity(); }
  bool full() const { return table_.full(); }

  // The relay of `flow`, or kNoRelay.
  RelayId find(const FlowKey& flow) const { return table_.find(flow); }
  // Whether `id` names a live relay.
  bool live(RelayId id) const;

  // Adds a relay for `flow` (precondition: find(flow) == kNoRelay and !full(): the caller
  // evicts oldest() first, closing its socket). Returns its id.
  RelayId add(const FlowKey& flow, Timestamp now);
  // A packet went out or came in on `id` (precondition: live(id)).
  void used(RelayId id, Timestamp now);
  void remove(RelayId id);

  // The least recently used relay (kNoRelay when empty).
  RelayId oldest() const { return table_.oldest(); }
  // The relay idle since `now - idle`, or kNoRelay. The caller removes it and asks again.
  RelayId find_idle(Timestamp now) const;
  // When the oldest relay becomes idle (Timestamp::never() when empty).
  Timestamp next_idle_expiry() const;

  const FlowKey& flow(RelayId id) const { return table_.key(id); }
  Relay& relay(RelayId id) { return table_.value(id); }
  const Relay& relay(RelayId id) const { return table_.value(id); }

  // Iteration from the most to the least recently used relay.
  RelayId newest() const { return table_.newest(); }
  RelayId older(RelayId id) const { return table_.older(id); }

 private:
  common::LruTable<FlowKey, Relay, core::FlowKeyFastHash, core::FlowKeyFastEq> table_;
  std::vector<bool> live_;  // by id: LruTable keeps no such flag
  Duration idle_;
};

}  // namespace quicstep::client::tun
