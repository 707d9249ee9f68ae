// ResidualBlocks: the only state a GFW-like censor keeps beyond a flow: after a blocking
// decision, the (protocol, client IP, server IP, server port) triple stays blocked for a
// residual period, whatever the client port of later connections. Bounded (capacity,
// oldest evicted first) and expired in simulated time: `now` is passed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/flow_key.hpp"
#include "common/lru_table.hpp"
#include "common/timestamp.hpp"

namespace quicstep::censor {

struct ResidualKey {
  std::uint8_t protocol = 0;
  common::IpAddress client;
  common::IpAddress server;
  std::uint16_t server_port = 0;

  static ResidualKey of(const common::FlowKey& flow) {
    return {flow.protocol, flow.client, flow.server, flow.server_port};
  }
  friend bool operator==(const ResidualKey&, const ResidualKey&) = default;
};

class ResidualBlocks {
 public:
  // Preconditions: capacity >= 1; period >= 0.
  ResidualBlocks(std::size_t capacity, common::Duration period);

  // Blocks `key` until now + period (a later block of the same key extends it). When the
  // table is full the entry that expires first is evicted (counted in evicted()).
  void block(const ResidualKey& key, common::Timestamp now);

  // Whether `key` is blocked at `now`. Expires what is due first.
  bool blocked(const ResidualKey& key, common::Timestamp now);

  // Removes every entry whose period ended at or before `now`.
  void expire(common::Timestamp now);

  // When the next entry expires, or nullopt when empty (for a frontend's timer).
  std::optional<common::Timestamp> next_expiry() const;

  std::size_t size() const { return table_.size(); }
  std::uint64_t evicted() const { return evicted_; }

 private:
  struct Hash {
    std::uint64_t operator()(const ResidualKey& k) const noexcept;
  };
  // Newest = latest expiry: every entry has the same period, so LRU order is expiry order.
  common::LruTable<ResidualKey, common::Timestamp, Hash> table_;
  common::Duration period_;
  std::uint64_t evicted_ = 0;
};

}  // namespace quicstep::censor
