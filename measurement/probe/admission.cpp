#include "measurement/probe/admission.hpp"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace quicstep::measurement::probe {

TokenBucket::TokenBucket(double rate_per_second, double burst)
    : rate_per_ns_(rate_per_second > 0 ? rate_per_second / 1e9 : 0),
      burst_(std::max(1.0, burst)),
      tokens_(std::max(1.0, burst)) {}

void TokenBucket::refill(std::uint64_t now_ns) {
  if (!started_) {
    started_ = true;
    last_ns_ = now_ns;
    return;
  }
  if (now_ns > last_ns_) {
    tokens_ = std::min(burst_, tokens_ + static_cast<double>(now_ns - last_ns_) * rate_per_ns_);
    last_ns_ = now_ns;
  }
}

bool TokenBucket::take(std::uint64_t now_ns) {
  if (rate_per_ns_ == 0) return true;
  refill(now_ns);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

std::uint64_t TokenBucket::next_available(std::uint64_t now_ns) {
  if (rate_per_ns_ == 0) return now_ns;
  refill(now_ns);
  if (tokens_ >= 1.0) return now_ns;
  return now_ns + static_cast<std::uint64_t>((1.0 - tokens_) / rate_per_ns_) + 1;
}

std::uint64_t PrefixLimiter::prefix_key(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    sockaddr_in a{};
    std::memcpy(&a, &addr, sizeof(a));
    std::uint8_t b[4];
    std::memcpy(b, &a.sin_addr, 4);
    return (std::uint64_t{4} << 56) | (std::uint64_t{b[0]} << 16) | (std::uint64_t{b[1]} << 8) |
           b[2];
  }
  sockaddr_in6 a{};
  std::memcpy(&a, &addr, sizeof(a));
  std::uint64_t key = std::uint64_t{6} << 56;
  for (int i = 0; i < 6; ++i) key |= std::uint64_t{a.sin6_addr.s6_addr[i]} << (8 * (5 - i));
  return key;
}

bool PrefixLimiter::try_acquire(const sockaddr_storage& addr) {
  if (per_prefix_ == 0) return true;
  unsigned& n = counts_[prefix_key(addr)];
  if (n >= per_prefix_) return false;
  ++n;
  return true;
}

void PrefixLimiter::release(const sockaddr_storage& addr) {
  if (per_prefix_ == 0) return;
  auto it = counts_.find(prefix_key(addr));
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

unsigned PrefixLimiter::in_use(const sockaddr_storage& addr) const {
  auto it = counts_.find(prefix_key(addr));
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace quicstep::measurement::probe
