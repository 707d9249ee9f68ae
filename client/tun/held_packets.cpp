#include "client/tun/held_packets.hpp"

#include <algorithm>
#include <cstring>

namespace quicstep::client::tun {

HeldPackets::HeldPackets(std::size_t capacity, std::size_t max_payload)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      max_payload_(std::max<std::size_t>(max_payload, 1)),
      storage_(capacity_ * max_payload_) {
  entries_.reserve(capacity_);
  free_.reserve(capacity_);
  for (std::size_t s = capacity_; s > 0; --s) free_.push_back(static_cast<std::uint32_t>(s - 1));
}

bool HeldPackets::hold(RelayId relay, common::Bytes payload, Timestamp release) {
  if (free_.empty() || payload.size() > max_payload_) return false;
  const std::uint32_t s = free_.back();
  free_.pop_back();
  if (!payload.empty()) std::memcpy(slot(s), payload.data(), payload.size());
  entries_.push_back(Entry{relay, s, static_cast<std::uint32_t>(payload.size()), release});
  next_release_ = std::min(next_release_, release);
  return true;
}

bool HeldPackets::holds(RelayId relay) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [relay](const Entry& e) { return e.relay == relay; });
}

std::size_t HeldPackets::drop_relay(RelayId relay) {
  const std::size_t before = entries_.size();
  std::erase_if(entries_, [&](const Entry& e) {
    if (e.relay != relay) return false;
    free_.push_back(e.slot);
    return true;
  });
  recompute_next();
  return before - entries_.size();
}

void HeldPackets::recompute_next() {
  next_release_ = Timestamp::never();
  for (const Entry& e : entries_) next_release_ = std::min(next_release_, e.release);
}

}  // namespace quicstep::client::tun
