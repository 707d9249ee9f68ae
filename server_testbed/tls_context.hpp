// TlsContext: the GnuTLS certificate credentials shared (read-only) by every worker, and
// the per-connection server session set up for QUIC (ngtcp2_crypto_gnutls) with ALPN h3.
#pragma once

#include <gnutls/gnutls.h>

#include <memory>
#include <string>

#include "common/error.hpp"

struct ngtcp2_crypto_conn_ref;

namespace quicstep::server_testbed {

class TlsContext {
 public:
  // Loads cert_file and key_file (PEM). Failures: GnuTLS refusing the credentials, the files
  // (quoted), the ticket key or the anti-replay state.
  using Loaded = common::Result<std::unique_ptr<TlsContext>, common::Failure>;
  static Loaded load(const std::string& cert_file, const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new server session whose ptr is conn_ref (ngtcp2 finds its connection through it).
  // nullptr on failure. The caller owns it (gnutls_deinit).
  gnutls_session_t new_session(ngtcp2_crypto_conn_ref* conn_ref) const;

 private:
  TlsContext() = default;
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_datum_t ticket_key_{};             // session tickets: one key for every worker
  gnutls_anti_replay_t anti_replay_ = nullptr;  // 0-RTT: GnuTLS's ClientHello time window
};

}  // namespace quicstep::server_testbed
