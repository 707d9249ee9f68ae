#include "lab/censor/residual_blocks.hpp"

namespace quicstep::censor {

std::uint64_t ResidualBlocks::Hash::operator()(const ResidualKey& k) const noexcept {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint8_t b) { h = (h ^ b) * 1099511628211ull; };
  mix(k.protocol);
  for (auto b : k.client.octets()) mix(b);
  for (auto b : k.server.octets()) mix(b);
  mix(static_cast<std::uint8_t>(k.server_port >> 8));
  mix(static_cast<std::uint8_t>(k.server_port));
  return h ^ (h >> 29);
}

ResidualBlocks::ResidualBlocks(std::size_t capacity, common::Duration period)
    : table_(capacity, Hash{}), period_(period) {}

void ResidualBlocks::block(const ResidualKey& key, common::Timestamp now) {
  expire(now);
  auto h = table_.find(key);
  if (h == decltype(table_)::npos) {
    if (table_.full()) {
      table_.erase(table_.oldest());
      ++evicted_;
    }
    h = table_.insert(key);
  } else {
    table_.touch(h);
  }
  table_.value(h) = now + period_;
}

bool ResidualBlocks::blocked(const ResidualKey& key, common::Timestamp now) {
  expire(now);
  return table_.find(key) != decltype(table_)::npos;
}

void ResidualBlocks::expire(common::Timestamp now) {
  while (!table_.empty() && table_.value(table_.oldest()) <= now) table_.erase(table_.oldest());
}

std::optional<common::Timestamp> ResidualBlocks::next_expiry() const {
  if (table_.empty()) return std::nullopt;
  return table_.value(table_.oldest());
}

}  // namespace quicstep::censor
