#include "measurement/probe/probe_connection.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "server_testbed/migration_policy.hpp"

namespace quicstep::measurement::probe {

namespace {

using server_testbed::UdpSocket;
using server_testbed::sockaddr_len;

constexpr char kPriority[] =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
    "+AES-256-GCM:+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
    "+GROUP-SECP384R1";
constexpr std::size_t kMaxWriteIterations = 64;
constexpr int kMaxReadsPerWakeup = 16;
constexpr std::string_view kUserAgent = "quicstep-probe";

ProbeConnection* self(void* ud) { return static_cast<ProbeConnection*>(ud); }

void cb_rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_NONCE, dest, len);
}
int cb_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void*) {
  gnutls_rnd(GNUTLS_RND_NONCE, cid->data, cidlen);
  cid->datalen = cidlen;
  gnutls_rnd(GNUTLS_RND_NONCE, token, NGTCP2_STATELESS_RESET_TOKENLEN);
  return 0;
}
int cb_handshake_completed(ngtcp2_conn*, void* ud) {
  return self(ud)->on_handshake_completed(0) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_recv_retry(ngtcp2_conn* conn, const ngtcp2_pkt_hd* hd, void* ud) {
  self(ud)->on_retry();
  return ngtcp2_crypto_recv_retry_cb(conn, hd, ud);
}
int cb_stream_data(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t, const uint8_t* data,
                   size_t len, void* ud, void*) {
  return self(ud)->on_stream_data(flags, id, data, len) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_acked(ngtcp2_conn*, int64_t id, uint64_t, uint64_t len, void* ud, void*) {
  return self(ud)->on_acked(id, len) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_stream_close(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t code, void* ud, void*) {
  return self(ud)->on_stream_close(flags, id, code) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_extend(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
  return self(ud)->on_extend_stream_data(id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_path_validation(ngtcp2_conn*, uint32_t, const ngtcp2_path*,
                       ngtcp2_path_validation_result res, void* ud) {
  self(ud)->on_path_validation(res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS);
  return 0;
}
void cb_qlog(void* ud, uint32_t, const void* data, size_t len) { self(ud)->on_qlog(data, len); }
ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) {
  return static_cast<ProbeConnection*>(ref->user_data)->conn();
}

int h3_recv_data(nghttp3_conn*, int64_t id, const uint8_t*, size_t len, void* ud, void*) {
  ngtcp2_conn_extend_max_stream_offset(self(ud)->conn(), id, len);
  ngtcp2_conn_extend_max_offset(self(ud)->conn(), len);
  return 0;
}
int h3_deferred(nghttp3_conn*, int64_t id, size_t n, void* ud, void*) {
  ngtcp2_conn_extend_max_stream_offset(self(ud)->conn(), id, n);
  ngtcp2_conn_extend_max_offset(self(ud)->conn(), n);
  return 0;
}
int h3_recv_header(nghttp3_conn*, int64_t id, int32_t token, nghttp3_rcbuf*, nghttp3_rcbuf* value,
                   uint8_t, void* ud, void*) {
  self(ud)->on_header(id, token, value);
  return 0;
}
int h3_end_stream(nghttp3_conn*, int64_t id, void* ud, void*) {
  self(ud)->on_end_stream(id);
  return 0;
}

ngtcp2_path path_of(sockaddr_storage& local, sockaddr_storage& remote) {
  return {{reinterpret_cast<sockaddr*>(&local), sockaddr_len(local)},
          {reinterpret_cast<sockaddr*>(&remote), sockaddr_len(remote)}, nullptr};
}

// A socket bound to `local` (port 0) and connected to `server`, so ICMP errors (port
// unreachable) come back as ECONNREFUSED; *bound gets the local address the kernel chose.
UdpSocket open_connected(const sockaddr_storage& local, const sockaddr_storage& server,
                         sockaddr_storage* bound, std::string* error) {
  UdpSocket s = UdpSocket::open_client(local, sockaddr_len(local), error);
  if (!s.valid()) return s;
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&server), sockaddr_len(server)) != 0) {
    *error = std::string("connect: ") + std::strerror(errno);
    return UdpSocket();
  }
  socklen_t len = sizeof(*bound);
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(bound), &len);
  return s;
}

double ms(ngtcp2_tstamp d) { return static_cast<double>(d) / NGTCP2_MILLISECONDS; }

std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace

std::unique_ptr<ProbeConnection> ProbeConnection::start(const TryOptions& options,
                                                        gnutls_certificate_credentials_t cred,
                                                        FdRegistry& registry, ngtcp2_tstamp now,
                                                        std::string* error) {
  std::unique_ptr<ProbeConnection> c(new ProbeConnection(options, registry));
  if (c->init(cred, now, error) != 0) return nullptr;
  c->write(now);
  return c;
}

int ProbeConnection::init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now,
                          std::string* error) {
  started_ = now;
  last_ts_ = now;
  step_deadline_ = now + (options_.first_answer_timeout != 0
                              ? std::min(options_.first_answer_timeout, options_.step_timeout)
                              : options_.step_timeout);
  sock_ = open_connected(options_.local, options_.server, &local_now_, error);
  if (!sock_.valid()) return -1;
  registry_.watch(sock_.fd(), this);
  ngtcp2_callbacks cb{};
  cb.client_initial = ngtcp2_crypto_client_initial_cb;
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.recv_stream_data = cb_stream_data;
  cb.acked_stream_data_offset = cb_acked;
  cb.stream_close = cb_stream_close;
  cb.recv_retry = cb_recv_retry;
  cb.rand = cb_rand;
  cb.get_new_connection_id = cb_new_cid;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.extend_max_stream_data = cb_extend;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.handshake_completed = cb_handshake_completed;
  cb.path_validation = cb_path_validation;
  ngtcp2_cid dcid{}, scid{};
  dcid.datalen = 18;
  scid.datalen = 17;
  gnutls_rnd(GNUTLS_RND_NONCE, dcid.data, dcid.datalen);
  gnutls_rnd(GNUTLS_RND_NONCE, scid.data, scid.datalen);
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now;
  settings.qlog.odcid = dcid;
  settings.qlog.write = cb_qlog;  // counts the server's NEW_CONNECTION_ID frames
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = 1 << 20;
  params.initial_max_stream_data_uni = 256 << 10;
  params.initial_max_data = 2 << 20;
  params.initial_max_streams_uni = 100;
  params.max_idle_timeout = 30 * NGTCP2_SECONDS;
  params.active_connection_id_limit = 8;
  sockaddr_storage remote = options_.server;
  ngtcp2_path path = path_of(local_now_, remote);
  if (ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                             &params, nullptr, this) != 0) {
    *error = "ngtcp2_conn_client_new";
    return -1;
  }
  conn_ref_ = {get_conn, this};
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(options_.alpn.data()),
                      static_cast<unsigned>(options_.alpn.size())};
  if (gnutls_init(&tls_, GNUTLS_CLIENT) != 0 ||
      gnutls_priority_set_direct(tls_, kPriority, nullptr) != 0 ||
      ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
      gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, cred) != 0 ||
      gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0 ||
      gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, options_.sni.data(), options_.sni.size()) !=
          0) {
    *error = "GnuTLS client session";
    return -1;
  }
  gnutls_session_set_ptr(tls_, &conn_ref_);
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  return 0;
}

ProbeConnection::~ProbeConnection() {
  if (conn_ && outcome_.handshake_done && !ngtcp2_conn_is_in_draining_period(conn_) &&
      !ngtcp2_conn_is_in_closing_period(conn_) && sock_.valid()) {
    // A polite close so the server frees the connection now (best effort).
    std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi{};
    ngtcp2_connection_close_error ccerr;
    ngtcp2_connection_close_error_default(&ccerr);
    const auto n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf.data(),
                                                      buf.size(), &ccerr, last_ts_);
    if (n > 0) {
      // On both paths: a server that ignores the new one still frees the connection.
      sock_.send(buf.data(), static_cast<std::size_t>(n), options_.server,
                 sockaddr_len(options_.server));
      if (old_sock_.valid()) {
        old_sock_.send(buf.data(), static_cast<std::size_t>(n), options_.server,
                       sockaddr_len(options_.server));
      }
    }
  }
  close_sockets();
  if (h3_) nghttp3_conn_del(h3_);
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
}

void ProbeConnection::close_sockets() {
  if (sock_.valid()) registry_.unwatch(sock_.fd());
  if (old_sock_.valid()) registry_.unwatch(old_sock_.fd());
  sock_ = UdpSocket();
  old_sock_ = UdpSocket();
}

int ProbeConnection::on_handshake_completed(ngtcp2_tstamp) {
  outcome_.handshake_done = true;
  step_ = Step::first_response;
  // The handshake's own timestamp is not passed to this callback; the step deadline is
  // refreshed by the caller (see read_socket) once the packet has been processed.
  if (init_http3() != 0) return -1;
  return submit_get(&first_stream_);
}

int ProbeConnection::init_http3() {
  nghttp3_callbacks cb{};
  cb.recv_data = h3_recv_data;
  cb.deferred_consume = h3_deferred;
  cb.recv_header = h3_recv_header;
  cb.end_stream = h3_end_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  if (nghttp3_conn_client_new(&h3_, &cb, &settings, nghttp3_mem_default(), this) != 0) return -1;
  std::int64_t ctrl = 0, enc = 0, dec = 0;
  if (ngtcp2_conn_open_uni_stream(conn_, &ctrl, nullptr) != 0 ||
      nghttp3_conn_bind_control_stream(h3_, ctrl) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &enc, nullptr) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &dec, nullptr) != 0 ||
      nghttp3_conn_bind_qpack_streams(h3_, enc, dec) != 0) {
    return -1;
  }
  return 0;
}

int ProbeConnection::submit_get(std::int64_t* stream_id) {
  if (ngtcp2_conn_open_bidi_stream(conn_, stream_id, nullptr) != 0) return -1;
  auto nv = [](std::string_view n, std::string_view v) {
    return nghttp3_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(),
                      v.size(), NGHTTP3_NV_FLAG_NONE};
  };
  const std::array<nghttp3_nv, 5> nva{nv(":method", "GET"), nv(":scheme", "https"),
                                      nv(":authority", options_.sni), nv(":path", "/"),
                                      nv("user-agent", kUserAgent)};
  return nghttp3_conn_submit_request(h3_, *stream_id, nva.data(), nva.size(), nullptr, nullptr) ==
                 0 ? 0 : -1;
}

int ProbeConnection::on_stream_data(std::uint32_t flags, std::int64_t id,
                                    const std::uint8_t* data, std::size_t len) {
  if (!h3_) return 0;
  if (reading_old_ && id == second_stream_) second_on_old_ += len;
  const auto n = nghttp3_conn_read_stream(h3_, id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
  if (n < 0) return -1;
  ngtcp2_conn_extend_max_stream_offset(conn_, id, static_cast<std::uint64_t>(n));
  ngtcp2_conn_extend_max_offset(conn_, static_cast<std::uint64_t>(n));
  return 0;
}

void ProbeConnection::on_header(std::int64_t id, std::int32_t token, nghttp3_rcbuf* value) {
  if (id != first_stream_) return;
  const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
  const std::string_view text(reinterpret_cast<const char*>(v.base), v.len);
  if (token == NGHTTP3_QPACK_TOKEN__STATUS) {
    int status = 0;
    for (char c : text) {
      if (c < '0' || c > '9' || status > 999) { status = 0; break; }
      status = status * 10 + (c - '0');
    }
    outcome_.facts.status = status;
  } else if (token == NGHTTP3_QPACK_TOKEN_SERVER) {
    outcome_.facts.server.assign(text.substr(0, 128));
  }
}

void ProbeConnection::on_end_stream(std::int64_t id) {
  if (id == first_stream_ && step_ == Step::first_response) {
    outcome_.first_response = true;
    switch_pending_ = true;
  } else if (id == second_stream_ && step_ == Step::second_response) {
    finish(second_on_old_ > 0 ? Label::response_on_old_path : Label::pass, std::nullopt, 0);
  }
}

int ProbeConnection::on_acked(std::int64_t id, std::uint64_t len) {
  return h3_ && nghttp3_conn_add_ack_offset(h3_, id, len) != 0 ? -1 : 0;
}

int ProbeConnection::on_stream_close(std::uint32_t flags, std::int64_t id, std::uint64_t code) {
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = NGHTTP3_H3_NO_ERROR;
  if (!h3_) return 0;
  const int rv = nghttp3_conn_close_stream(h3_, id, code);
  return rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND ? 0 : -1;
}

int ProbeConnection::on_extend_stream_data(std::int64_t id) {
  return h3_ && nghttp3_conn_unblock_stream(h3_, id) != 0 ? -1 : 0;
}

void ProbeConnection::on_path_validation(bool success) {
  if (step_ != Step::validating) return;
  pv_result_pending_ = true;
  pv_success_ = success;
}

void ProbeConnection::on_qlog(const void* data, std::size_t len) {
  if (step_ != Step::handshake && step_ != Step::first_response) return;
  const std::string_view text(static_cast<const char*>(data), len);
  if (text.find("transport:packet_received") == std::string_view::npos) return;
  outcome_.facts.spare_cids += count_of(text, "\"frame_type\":\"new_connection_id\"");
}

void ProbeConnection::collect_facts() {
  facts_collected_ = true;
  ConnectionFacts& f = outcome_.facts;
  f.version = ngtcp2_conn_get_negotiated_version(conn_);
  gnutls_datum_t alpn{};
  if (gnutls_alpn_get_selected_protocol(tls_, &alpn) == 0) {
    f.alpn.assign(reinterpret_cast<const char*>(alpn.data), alpn.size);
  }
  if (const ngtcp2_transport_params* tp = ngtcp2_conn_get_remote_transport_params(conn_)) {
    f.disable_active_migration = tp->disable_active_migration != 0;
    f.active_connection_id_limit = tp->active_connection_id_limit;
    f.preferred_address = tp->preferred_address_present != 0;
    f.max_idle_timeout_ms = tp->max_idle_timeout / NGTCP2_MILLISECONDS;
  }
}

void ProbeConnection::switch_path(ngtcp2_tstamp now) {
  switch_pending_ = false;
  collect_facts();
  outcome_.facts.first_response_ms = ms(now - started_);
  const bool active = options_.kind != TryKind::nat_rebinding;
  if (active && outcome_.facts.disable_active_migration) {
    return finish(Label::refused, std::nullopt, now);
  }
  std::string error;
  sockaddr_storage bound{};
  const sockaddr_storage& from =
      options_.kind == TryKind::address_migration ? options_.second_local : options_.local;
  UdpSocket fresh = open_connected(from, options_.server, &bound, &error);
  if (!fresh.valid()) return finish(Label::connection_closed, "socket: " + error, now);
  local_old_ = local_now_;
  local_now_ = bound;
  old_sock_ = std::move(sock_);
  sock_ = std::move(fresh);
  registry_.watch(sock_.fd(), this);
  step_deadline_ = now + options_.step_timeout;
  if (!active) {
    ngtcp2_addr local{reinterpret_cast<sockaddr*>(&local_now_), sockaddr_len(local_now_)};
    ngtcp2_conn_set_local_addr(conn_, &local);
    if (submit_get(&second_stream_) != 0) {
      return finish(Label::connection_closed, "second request", now);
    }
    step_ = Step::second_response;
    return;
  }
  sockaddr_storage remote = options_.server;
  ngtcp2_path path = path_of(local_now_, remote);
  step_ = Step::validating;
  const int rv = ngtcp2_conn_initiate_migration(conn_, &path, now);
  if (rv == NGTCP2_ERR_CONN_ID_BLOCKED) return finish(Label::no_spare_cid, std::nullopt, now);
  if (rv == NGTCP2_ERR_INVALID_STATE) return finish(Label::refused, std::nullopt, now);
  if (rv != 0) return finish(Label::connection_closed, std::nullopt, now);
}

void ProbeConnection::read_socket(UdpSocket& sock, bool old_path, ngtcp2_tstamp now) {
  std::array<std::uint8_t, 65536> buf;
  for (int i = 0; i < kMaxReadsPerWakeup && !finished_ && sock.valid(); ++i) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    std::uint32_t ecn = 0;
    const long n = sock.recv(buf.data(), buf.size(), &from, &from_len, &ecn);
    if (n < 0) {
      if (errno == ECONNREFUSED) {
        icmp_seen_ = true;
        if (step_ == Step::handshake) finish(Label::handshake_failed, "icmp_unreachable", now);
        continue;
      }
      break;
    }
    // After the switch, what the old socket gets is handed over as if on the current path,
    // so that a response sent there is seen (and counted against the server).
    sockaddr_storage local = local_now_;
    if (old_path) {
      const ngtcp2_path* current = ngtcp2_conn_get_path(conn_);
      std::memcpy(&local, current->local.addr,
                  std::min<std::size_t>(current->local.addrlen, sizeof(local)));
    }
    ngtcp2_path path = path_of(local, from);
    ngtcp2_pkt_info pi{};
    pi.ecn = ecn;
    const Step before = step_;
    reading_old_ = old_path;
    const int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, buf.data(),
                                        static_cast<std::size_t>(n), now);
    reading_old_ = false;
    if (rv != 0) return on_read_error(rv, now);
    if (before == Step::handshake && !answered_) {
      answered_ = true;  // the server answers: the whole step timeout applies
      step_deadline_ = std::max(step_deadline_, started_ + options_.step_timeout);
    }
    if (before == Step::handshake && step_ == Step::first_response) {
      outcome_.facts.handshake_ms = ms(now - started_);
      step_deadline_ = now + options_.step_timeout;
    }
    if (finished_) return;
  }
}

void ProbeConnection::on_read_error(int rv, ngtcp2_tstamp now) {
  if (rv == NGTCP2_ERR_RECV_VERSION_NEGOTIATION) {
    return finish(Label::handshake_failed, "version_negotiation", now);
  }
  if (step_ == Step::handshake) {
    return finish(Label::handshake_failed,
                  rv == NGTCP2_ERR_DRAINING ? "connection_closed" : "handshake_failed", now);
  }
  finish(Label::connection_closed, "connection_closed", now);
}

void ProbeConnection::on_readable(int fd, ngtcp2_tstamp now) {
  if (finished_) return;
  last_ts_ = now;
  if (fd == sock_.fd()) {
    read_socket(sock_, false, now);
  } else if (old_sock_.valid() && fd == old_sock_.fd()) {
    read_socket(old_sock_, true, now);
  }
  after_io(now);
}

void ProbeConnection::after_io(ngtcp2_tstamp now) {
  if (!finished_ && pv_result_pending_) {
    pv_result_pending_ = false;
    if (!pv_success_) return finish(Label::path_validation_failed, std::nullopt, now);
    if (submit_get(&second_stream_) != 0) {
      return finish(Label::connection_closed, "second request", now);
    }
    step_ = Step::second_response;
    step_deadline_ = now + options_.step_timeout;
  }
  if (!finished_ && switch_pending_) switch_path(now);
  if (!finished_) write(now);
}

void ProbeConnection::fail_step(ngtcp2_tstamp now) {
  switch (step_) {
    case Step::handshake:
      return finish(Label::handshake_failed, icmp_seen_ ? "icmp_unreachable" : "timeout", now);
    case Step::first_response:
      return finish(Label::connection_closed, "response_timeout", now);
    case Step::validating:
      return finish(Label::path_validation_failed, std::nullopt, now);
    case Step::second_response:
      return finish(second_on_old_ > 0 ? Label::response_on_old_path
                                       : Label::timeout_after_switch, std::nullopt, now);
    case Step::done:
      return;
  }
}

void ProbeConnection::on_expiry(ngtcp2_tstamp now) {
  if (finished_) return;
  last_ts_ = now;
  if (now >= step_deadline_) return fail_step(now);
  if (now >= ngtcp2_conn_get_expiry(conn_)) {
    const int rv = ngtcp2_conn_handle_expiry(conn_, now);
    if (rv != 0) {
      // Idle timeout or too many losses: the step did not complete.
      return fail_step(now);
    }
  }
  after_io(now);
}

ngtcp2_tstamp ProbeConnection::next_deadline() const {
  if (finished_) return UINT64_MAX;
  return std::min(step_deadline_, ngtcp2_conn_get_expiry(conn_));
}

void ProbeConnection::write(ngtcp2_tstamp now) {
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  for (std::size_t i = 0; i < kMaxWriteIterations && !finished_; ++i) {
    std::int64_t sid = -1;
    int fin = 0;
    std::array<nghttp3_vec, 16> vec;
    nghttp3_ssize cnt = 0;
    if (h3_) {
      cnt = nghttp3_conn_writev_stream(h3_, &sid, &fin, vec.data(), vec.size());
      if (cnt < 0) return finish(Label::connection_closed, "nghttp3_conn_writev_stream", now);
    }
    ngtcp2_ssize ndatalen = -1;
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    ngtcp2_pkt_info pi{};
    const auto n = ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, buf.data(), buf.size(),
                                             &ndatalen, flags, sid,
                                             reinterpret_cast<const ngtcp2_vec*>(vec.data()),
                                             static_cast<std::size_t>(cnt), now);
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) { nghttp3_conn_block_stream(h3_, sid); continue; }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR) { nghttp3_conn_shutdown_stream_write(h3_, sid); continue; }
      if (n == NGTCP2_ERR_WRITE_MORE) { nghttp3_conn_add_write_offset(h3_, sid, ndatalen); continue; }
      return on_read_error(static_cast<int>(n), now);
    }
    if (ndatalen >= 0 && h3_) nghttp3_conn_add_write_offset(h3_, sid, ndatalen);
    if (n == 0) break;
    sockaddr_storage local{};
    std::memcpy(&local, ps.path.local.addr,
                std::min<std::size_t>(ps.path.local.addrlen, sizeof(local)));
    const bool on_old = old_sock_.valid() && server_testbed::same_endpoint(local, local_old_) &&
                        !server_testbed::same_endpoint(local, local_now_);
    const UdpSocket& s = on_old ? old_sock_ : sock_;
    if (!s.send(buf.data(), static_cast<std::size_t>(n), options_.server,
                sockaddr_len(options_.server)) && errno == ECONNREFUSED) {
      icmp_seen_ = true;
      if (step_ == Step::handshake) return finish(Label::handshake_failed, "icmp_unreachable", now);
    }
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, now);
}

void ProbeConnection::finish(Label label, std::optional<std::string> error, ngtcp2_tstamp) {
  if (finished_) return;
  finished_ = true;
  step_ = Step::done;
  outcome_.label = label;
  if (outcome_.handshake_done && !facts_collected_) collect_facts();
  if (error && !outcome_.first_response) outcome_.error = std::move(error);
}

}  // namespace quicstep::measurement::probe
