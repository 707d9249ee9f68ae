#include "quic/random.hpp"

#include <gnutls/crypto.h>

namespace quicstep::quic {

void rand_cb(std::uint8_t* dest, std::size_t len, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_NONCE, dest, len);
}

ngtcp2_cid random_cid(std::size_t len) {
  ngtcp2_cid cid{};
  cid.datalen = len;
  gnutls_rnd(GNUTLS_RND_NONCE, cid.data, cid.datalen);
  return cid;
}

}  // namespace quicstep::quic
