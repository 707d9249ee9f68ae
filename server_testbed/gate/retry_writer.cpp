#include "server_testbed/gate/retry_writer.hpp"

#include <gnutls/crypto.h>

#include <cstring>

namespace quicstep::server_testbed::gate {

RetryWriter::RetryWriter() {
  // What libngtcp2_crypto_gnutls's ngtcp2_crypto_aead_retry sets up (not exported in 0.12).
  aead_.native_handle = reinterpret_cast<void*>(static_cast<std::intptr_t>(
      GNUTLS_CIPHER_AES_128_GCM));
  aead_.max_overhead = 16;
  static constexpr char kKey[] = NGTCP2_RETRY_KEY_V1;
  static constexpr char kNonce[] = NGTCP2_RETRY_NONCE_V1;
  ready_ = ngtcp2_crypto_aead_ctx_encrypt_init(&ctx_, &aead_,
                                               reinterpret_cast<const std::uint8_t*>(kKey),
                                               sizeof(kNonce) - 1) == 0;
}

RetryWriter::~RetryWriter() {
  if (ready_) ngtcp2_crypto_aead_ctx_free(&ctx_);
}

ngtcp2_ssize RetryWriter::write(std::uint8_t* dest, std::size_t destlen, std::uint32_t version,
                                const ngtcp2_cid* dcid, const ngtcp2_cid* scid,
                                const ngtcp2_cid* odcid, const std::uint8_t* token,
                                std::size_t tokenlen) {
  if (!ready_ || version != NGTCP2_PROTO_VER_V1) {
    return ngtcp2_crypto_write_retry(dest, destlen, version, dcid, scid, odcid, token,
                                     tokenlen);
  }
  return ngtcp2_pkt_write_retry(dest, destlen, version, dcid, scid, odcid, token, tokenlen,
                                ngtcp2_crypto_encrypt_cb, &aead_, &ctx_);
}

}  // namespace quicstep::server_testbed::gate
