// The ngtcp2 callbacks that every endpoint takes from ngtcp2_crypto (GnuTLS backend) as they
// are, and ngtcp2's rand callback (quic/random.hpp), set on `cb`; an endpoint adds its own
// (client_initial or recv_client_initial, stream data, connection IDs, ...).
#pragma once

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "quic/random.hpp"

namespace quicstep::quic {

inline void set_crypto_callbacks(ngtcp2_callbacks& cb) {
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.rand = rand_cb;
}

}  // namespace quicstep::quic
