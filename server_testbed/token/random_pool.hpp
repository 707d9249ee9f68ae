#pragma once
// Random octets from GnuTLS's nonce generator, drawn 4 KiB at a time. gnutls_rnd costs
// ~250 ns per call on this VM whatever the length (its lock and generator state), which was
// a quarter of the gate's per-Retry CPU when called twice per packet (Retry SCID, token
// nonce). Octets handed out are wiped from the pool. Not thread-safe: one pool per thread.
#include <array>
#include <cstddef>
#include <cstdint>

namespace quicstep::server_testbed::token {

class RandomPool {
 public:
  // Fills out[0..n) (n <= 4096) with fresh random octets.
  void fill(std::uint8_t* out, std::size_t n);

 private:
  std::array<std::uint8_t, 4096> buf_{};
  std::size_t pos_ = 4096;  // empty until the first fill
};

}  // namespace quicstep::server_testbed::token
