// Admission of new connections: a token bucket for the global rate (--rate) and a counter
// per IPv4 /24 or IPv6 /48 (--per-24). Both sans-IO: time is passed in (nanoseconds).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <unordered_map>

namespace quicstep::measurement::probe {

class TokenBucket {
 public:
  // rate_per_second <= 0: unlimited. burst: tokens that can accumulate (at least 1).
  TokenBucket(double rate_per_second, double burst);
  // Takes one token if one is available at `now_ns`.
  bool take(std::uint64_t now_ns);
  // When the next token will be available (now_ns if one is).
  std::uint64_t next_available(std::uint64_t now_ns);

 private:
  void refill(std::uint64_t now_ns);
  double rate_per_ns_;
  double burst_;
  double tokens_;
  std::uint64_t last_ns_ = 0;
  bool started_ = false;
};

class PrefixLimiter {
 public:
  // per_prefix 0: unlimited.
  explicit PrefixLimiter(unsigned per_prefix) : per_prefix_(per_prefix) {}
  // Reserves a slot for a connection to addr (AF_INET or AF_INET6); false when the prefix
  // already has per_prefix connections.
  bool try_acquire(const sockaddr_storage& addr);
  // Releases a slot taken by try_acquire (precondition: it succeeded for the same prefix).
  void release(const sockaddr_storage& addr);
  unsigned in_use(const sockaddr_storage& addr) const;

  // The /24 (IPv4) or /48 (IPv6) of addr as a key.
  static std::uint64_t prefix_key(const sockaddr_storage& addr);

 private:
  unsigned per_prefix_;
  std::unordered_map<std::uint64_t, unsigned> counts_;
};

}  // namespace quicstep::measurement::probe
