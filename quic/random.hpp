// Randomness for QUIC endpoints, from GnuTLS (the one crypto library): ngtcp2's rand
// callback (packet-number and padding choices, PATH_CHALLENGE data), connection IDs and
// stateless-reset tokens of clients. GNUTLS_RND_NONCE: unpredictable, not key material.
#pragma once

#include <ngtcp2/ngtcp2.h>

#include <cstddef>
#include <cstdint>

namespace quicstep::quic {

// ngtcp2_callbacks::rand.
void rand_cb(std::uint8_t* dest, std::size_t len, const ngtcp2_rand_ctx* ctx);

// A random connection ID of `len` (<= NGTCP2_MAX_CIDLEN) bytes.
ngtcp2_cid random_cid(std::size_t len);

}  // namespace quicstep::quic
