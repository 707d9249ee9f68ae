#include "server_testbed/token/random_pool.hpp"

#include <gnutls/crypto.h>

#include <cstdlib>
#include <cstring>

namespace quicstep::server_testbed::token {

void RandomPool::fill(std::uint8_t* out, std::size_t n) {
  if (n > buf_.size()) std::abort();  // a programming error, never attacker-driven
  if (buf_.size() - pos_ < n) {
    if (gnutls_rnd(GNUTLS_RND_NONCE, buf_.data(), buf_.size()) != 0) std::abort();
    pos_ = 0;
  }
  std::memcpy(out, buf_.data() + pos_, n);
  std::memset(buf_.data() + pos_, 0, n);
  pos_ += n;
}

}  // namespace quicstep::server_testbed::token
