// ReplayGuard: a bounded seen-set of Retry-token nonces. What "replayed" means here: a valid
// Retry token presented again more than `repeat_window_ms` after its first use (a client
// may resend its second Initial, with the same token, within that window; anything later is
// somebody reusing a token inside its lifetime). Entries older than the Retry token lifetime
// are forgotten (the token has expired anyway). When full, the oldest entry is evicted and
// counted: a replay of an evicted token then goes unnoticed (bounded memory wins).
// Sans-IO: times in milliseconds are passed in; not thread-safe (one per thread).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

#include "server_testbed/token/universal_token.hpp"

namespace quicstep::server_testbed::token {

class ReplayGuard {
 public:
  enum class Seen : std::uint8_t { first, repeat, replayed };

  ReplayGuard(std::size_t capacity, std::uint64_t repeat_window_ms, std::uint64_t retention_ms)
      : capacity_(capacity), repeat_window_ms_(repeat_window_ms), retention_ms_(retention_ms) {}

  Seen check(const std::array<std::uint8_t, kNonceLen>& nonce, std::uint64_t now_ms);

  std::size_t size() const { return first_seen_.size(); }
  std::uint64_t evicted_early() const { return evicted_early_; }

 private:
  void expire(std::uint64_t now_ms);

  std::size_t capacity_;
  std::uint64_t repeat_window_ms_;
  std::uint64_t retention_ms_;
  std::unordered_map<std::string, std::uint64_t> first_seen_;
  std::deque<std::pair<std::uint64_t, std::string>> order_;  // by first use
  std::uint64_t evicted_early_ = 0;
};

}  // namespace quicstep::server_testbed::token
