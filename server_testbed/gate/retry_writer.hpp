#pragma once
// Writes QUIC v1 Retry packets with an AES-128-GCM context for the Retry integrity key
// (RFC 9001 §5.8) set up once. ngtcp2_crypto_write_retry does the same through
// ngtcp2_pkt_write_retry but creates and frees a GnuTLS AEAD context (key schedule and
// GHASH table) on every call: ~270 ns of the ~100 ns it needs with a kept context on this
// VM. Other versions fall back to ngtcp2_crypto_write_retry. The unit test checks both
// paths write the same octets.
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <cstddef>
#include <cstdint>

namespace quicstep::server_testbed::gate {

class RetryWriter {
 public:
  RetryWriter();
  ~RetryWriter();
  RetryWriter(const RetryWriter&) = delete;
  RetryWriter& operator=(const RetryWriter&) = delete;

  // As ngtcp2_crypto_write_retry: the packet's length, or a negative value on error.
  ngtcp2_ssize write(std::uint8_t* dest, std::size_t destlen, std::uint32_t version,
                     const ngtcp2_cid* dcid, const ngtcp2_cid* scid, const ngtcp2_cid* odcid,
                     const std::uint8_t* token, std::size_t tokenlen);

 private:
  ngtcp2_crypto_aead aead_{};
  ngtcp2_crypto_aead_ctx ctx_{};
  bool ready_ = false;  // the v1 context was created
};

}  // namespace quicstep::server_testbed::gate
