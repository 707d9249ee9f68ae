#include "server_testbed/token/replay_guard.hpp"

namespace quicstep::server_testbed::token {

void ReplayGuard::expire(std::uint64_t now_ms) {
  while (!order_.empty() && order_.front().first + retention_ms_ < now_ms) {
    first_seen_.erase(order_.front().second);
    order_.pop_front();
  }
}

ReplayGuard::Seen ReplayGuard::check(const std::array<std::uint8_t, kNonceLen>& nonce,
                                     std::uint64_t now_ms) {
  expire(now_ms);
  std::string key(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  auto it = first_seen_.find(key);
  if (it != first_seen_.end()) {
    return now_ms - it->second <= repeat_window_ms_ ? Seen::repeat : Seen::replayed;
  }
  if (capacity_ == 0) return Seen::first;
  if (first_seen_.size() >= capacity_) {
    first_seen_.erase(order_.front().second);
    order_.pop_front();
    ++evicted_early_;
  }
  first_seen_.emplace(key, now_ms);
  order_.emplace_back(now_ms, std::move(key));
  return Seen::first;
}

}  // namespace quicstep::server_testbed::token
