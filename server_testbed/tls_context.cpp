#include "server_testbed/tls_context.hpp"

#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <cstring>

#include "quic/tls_priority.hpp"

namespace quicstep::server_testbed {

namespace {

constexpr char kAlpnH3[] = "h3";

// GnuTLS asks to remember each 0-RTT ClientHello within its window; nothing is stored, so
// 0-RTT replay protection is the window alone (README "Retry gate": 0-RTT).
int anti_replay_add(void*, time_t, const gnutls_datum_t*, const gnutls_datum_t*) { return 0; }

// Refuses a ClientHello that did not select h3 (the only protocol served).
int client_hello_cb(gnutls_session_t session, unsigned int, unsigned, unsigned int,
                    const gnutls_datum_t*) {
  gnutls_datum_t alpn{};
  if (gnutls_alpn_get_selected_protocol(session, &alpn) != 0) return -1;
  if (alpn.size != 2 || std::memcmp(alpn.data, kAlpnH3, 2) != 0) return -1;
  return 0;
}

}  // namespace

TlsContext::Loaded TlsContext::load(const std::string& cert_file, const std::string& key_file) {
  std::unique_ptr<TlsContext> ctx(new TlsContext());
  if (int rv = gnutls_certificate_allocate_credentials(&ctx->cred_); rv != 0) {
    return common::Failure(std::string("credentials: ") + gnutls_strerror(rv));
  }
  if (int rv = gnutls_certificate_set_x509_key_file(ctx->cred_, cert_file.c_str(),
                                                    key_file.c_str(), GNUTLS_X509_FMT_PEM);
      rv != 0) {
    return common::Failure("certificate `" + cert_file + "' / key `" + key_file +
                           "': " + gnutls_strerror(rv));
  }
  if (int rv = gnutls_session_ticket_key_generate(&ctx->ticket_key_); rv != 0) {
    return common::Failure(std::string("session ticket key: ") + gnutls_strerror(rv));
  }
  if (int rv = gnutls_anti_replay_init(&ctx->anti_replay_); rv != 0) {
    return common::Failure(std::string("anti-replay: ") + gnutls_strerror(rv));
  }
  gnutls_anti_replay_set_add_function(ctx->anti_replay_, anti_replay_add);
  gnutls_anti_replay_set_ptr(ctx->anti_replay_, nullptr);
  return ctx;
}

TlsContext::~TlsContext() {
  if (anti_replay_) gnutls_anti_replay_deinit(anti_replay_);
  if (ticket_key_.data) gnutls_memset(ticket_key_.data, 0, ticket_key_.size);
  gnutls_free(ticket_key_.data);
  if (cred_) gnutls_certificate_free_credentials(cred_);
}

gnutls_session_t TlsContext::new_session(ngtcp2_crypto_conn_ref* conn_ref) const {
  gnutls_session_t s = nullptr;
  if (gnutls_init(&s, GNUTLS_SERVER | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_AUTO_SEND_TICKET |
                          GNUTLS_NO_END_OF_EARLY_DATA) != 0) {
    return nullptr;
  }
  bool ok = gnutls_priority_set_direct(s, quic::kServerPriority.data(), nullptr) == 0 &&
            ngtcp2_crypto_gnutls_configure_server_session(s) == 0 &&
            gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred_) == 0 &&
            gnutls_session_ticket_enable_server(s, &ticket_key_) == 0;
  if (ok) {
    gnutls_anti_replay_enable(s, anti_replay_);
    gnutls_record_set_max_early_data_size(s, 0xffffffffu);  // QUIC: RFC 9001 4.6.1
  }
  if (ok) {
    gnutls_handshake_set_hook_function(s, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_POST,
                                       client_hello_cb);
    gnutls_session_set_ptr(s, conn_ref);
    gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(kAlpnH3)), 2};
    ok = gnutls_alpn_set_protocols(s, &alpn, 1,
                                   GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE) == 0;
  }
  if (!ok) {
    gnutls_deinit(s);
    return nullptr;
  }
  return s;
}

}  // namespace quicstep::server_testbed
