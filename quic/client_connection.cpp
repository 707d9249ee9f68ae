#include "quic/client_connection.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <array>

#include "quic/crypto_callbacks.hpp"
#include "quic/http3.hpp"
#include "quic/path.hpp"
#include "quic/random.hpp"
#include "quic/tls_priority.hpp"

namespace quicstep::quic {

// The C callbacks of ngtcp2 and nghttp3: each finds its connection in the user data and
// calls the hook.
struct ClientCallbacks {
  static ClientConnection* self(void* ud) { return static_cast<ClientConnection*>(ud); }
  static int fail_if(int rv) { return rv == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE; }

  static int new_cid(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token, std::size_t cidlen,
                     void*) {
    *cid = random_cid(cidlen);
    gnutls_rnd(GNUTLS_RND_NONCE, token, NGTCP2_STATELESS_RESET_TOKENLEN);
    return 0;
  }
  static int handshake_completed(ngtcp2_conn*, void* ud) {
    return fail_if(self(ud)->on_handshake_completed());
  }
  static int recv_rx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* ud) {
    if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) return 0;
    return fail_if(self(ud)->on_application_rx_key());
  }
  static int recv_retry(ngtcp2_conn* conn, const ngtcp2_pkt_hd* hd, void* ud) {
    self(ud)->on_retry();
    return ngtcp2_crypto_recv_retry_cb(conn, hd, ud);
  }
  static int path_validation(ngtcp2_conn*, std::uint32_t, const ngtcp2_path*,
                             ngtcp2_path_validation_result res, void* ud) {
    self(ud)->on_path_validation(res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS);
    return 0;
  }
  static void qlog(void* ud, std::uint32_t, const void* data, std::size_t len) {
    self(ud)->on_qlog(std::string_view(static_cast<const char*>(data), len));
  }
  static int stream_data(ngtcp2_conn*, std::uint32_t flags, std::int64_t id, std::uint64_t,
                         const std::uint8_t* data, std::size_t len, void* ud, void*) {
    ClientConnection* c = self(ud);
    if (!c->h3_) return 0;
    c->on_stream_data(id, len);
    const auto n =
        nghttp3_conn_read_stream(c->h3_, id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    if (n < 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    c->consumed(id, static_cast<std::uint64_t>(n));
    return 0;
  }
  static int acked(ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t len, void* ud,
                   void*) {
    nghttp3_conn* h3 = self(ud)->h3_;
    return fail_if(h3 && nghttp3_conn_add_ack_offset(h3, id, len) != 0 ? -1 : 0);
  }
  static int stream_close(ngtcp2_conn*, std::uint32_t flags, std::int64_t id,
                          std::uint64_t code, void* ud, void*) {
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = NGHTTP3_H3_NO_ERROR;
    nghttp3_conn* h3 = self(ud)->h3_;
    if (!h3) return 0;
    const int rv = nghttp3_conn_close_stream(h3, id, code);
    return fail_if(rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND ? 0 : -1);
  }
  static int extend_stream_data(ngtcp2_conn*, std::int64_t id, std::uint64_t, void* ud, void*) {
    nghttp3_conn* h3 = self(ud)->h3_;
    return fail_if(h3 && nghttp3_conn_unblock_stream(h3, id) != 0 ? -1 : 0);
  }
  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) {
    return self(ref->user_data)->conn_;
  }

  static int h3_recv_data(nghttp3_conn*, std::int64_t id, const std::uint8_t*, std::size_t len,
                          void* ud, void*) {
    self(ud)->on_body(id, len);
    self(ud)->consumed(id, len);
    return 0;
  }
  static int h3_deferred_consume(nghttp3_conn*, std::int64_t id, std::size_t n, void* ud,
                                 void*) {
    self(ud)->consumed(id, n);
    return 0;
  }
  static int h3_recv_header(nghttp3_conn*, std::int64_t id, std::int32_t token, nghttp3_rcbuf*,
                            nghttp3_rcbuf* value, std::uint8_t, void* ud, void*) {
    const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
    self(ud)->on_header(id, token, std::string_view(reinterpret_cast<const char*>(v.base), v.len));
    return 0;
  }
  static int h3_end_stream(nghttp3_conn*, std::int64_t id, void* ud, void*) {
    self(ud)->on_end_stream(id);
    return 0;
  }

  static ngtcp2_callbacks quic() {
    ngtcp2_callbacks cb{};
    set_crypto_callbacks(cb);
    cb.client_initial = ngtcp2_crypto_client_initial_cb;
    cb.recv_stream_data = stream_data;
    cb.acked_stream_data_offset = acked;
    cb.stream_close = stream_close;
    cb.recv_retry = recv_retry;
    cb.get_new_connection_id = new_cid;
    cb.extend_max_stream_data = extend_stream_data;
    cb.handshake_completed = handshake_completed;
    cb.path_validation = path_validation;
    cb.recv_rx_key = recv_rx_key;
    return cb;
  }

  static nghttp3_callbacks http3() {
    nghttp3_callbacks cb{};
    cb.recv_data = h3_recv_data;
    cb.deferred_consume = h3_deferred_consume;
    cb.recv_header = h3_recv_header;
    cb.end_stream = h3_end_stream;
    return cb;
  }
};

namespace {

constexpr std::size_t kMaxWritePackets = 64;  // per write_packets() call
constexpr std::size_t kDcidLength = 18;
constexpr std::size_t kScidLength = 17;

}  // namespace

ClientConnection::~ClientConnection() {
  if (h3_) nghttp3_conn_del(h3_);
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
}

common::Outcome ClientConnection::init(const ClientParams& p, gnutls_certificate_credentials_t cred,
                                       const sockaddr_storage& local,
                                       const sockaddr_storage& remote, ngtcp2_tstamp now) {
  const ngtcp2_callbacks cb = ClientCallbacks::quic();
  const ngtcp2_cid dcid = random_cid(kDcidLength);
  const ngtcp2_cid scid = random_cid(kScidLength);
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now;
  if (p.max_window != 0) settings.max_window = p.max_window;
  if (p.max_stream_window != 0) settings.max_stream_window = p.max_stream_window;
  if (p.qlog) {
    settings.qlog.odcid = dcid;
    settings.qlog.write = ClientCallbacks::qlog;
  }
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = p.max_stream_data_bidi_local;
  params.initial_max_stream_data_uni = p.max_stream_data_uni;
  params.initial_max_data = p.max_data;
  params.initial_max_streams_uni = p.max_streams_uni;
  params.max_idle_timeout = p.max_idle_timeout;
  params.active_connection_id_limit = p.active_connection_id_limit;
  sockaddr_storage l = local, r = remote;
  const ngtcp2_path path = make_path(l, r);
  if (ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                             &params, nullptr, this) != 0) {
    return common::Failure("ngtcp2_conn_client_new");
  }
  conn_ref_ = {ClientCallbacks::get_conn, this};
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(p.alpn.data())),
                      static_cast<unsigned>(p.alpn.size())};
  if (gnutls_init(&tls_, GNUTLS_CLIENT) != 0 ||
      gnutls_priority_set_direct(tls_, kClientPriority.data(), nullptr) != 0 ||
      ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
      gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, cred) != 0 ||
      gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0 ||
      gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, p.sni.data(), p.sni.size()) != 0) {
    return common::Failure("GnuTLS client session");
  }
  gnutls_session_set_ptr(tls_, &conn_ref_);
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  return {};
}

int ClientConnection::start_http3() {
  const nghttp3_callbacks cb = ClientCallbacks::http3();
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  if (nghttp3_conn_client_new(&h3_, &cb, &settings, nghttp3_mem_default(), this) != 0) {
    return -1;
  }
  return bind_http3_streams(conn_, h3_);
}

int ClientConnection::submit_get(std::string_view authority, std::string_view path,
                                 std::string_view user_agent, std::int64_t* stream_id) {
  if (ngtcp2_conn_open_bidi_stream(conn_, stream_id, nullptr) != 0) return -1;
  const std::array<nghttp3_nv, 5> nva{header(":method", "GET"), header(":scheme", "https"),
                                      header(":authority", authority), header(":path", path),
                                      header("user-agent", user_agent)};
  const std::size_t count = user_agent.empty() ? nva.size() - 1 : nva.size();
  return nghttp3_conn_submit_request(h3_, *stream_id, nva.data(), count, nullptr, nullptr) == 0
             ? 0
             : -1;
}

int ClientConnection::read_packet(const sockaddr_storage& local, const sockaddr_storage& remote,
                                  std::uint32_t ecn, const std::uint8_t* data, std::size_t len,
                                  ngtcp2_tstamp now) {
  sockaddr_storage l = local, r = remote;
  const ngtcp2_path path = make_path(l, r);
  ngtcp2_pkt_info pi{};
  pi.ecn = ecn;
  return ngtcp2_conn_read_pkt(conn_, &path, &pi, data, len, now);
}

void ClientConnection::write_packets(ngtcp2_tstamp now) {
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  for (std::size_t i = 0; i < kMaxWritePackets && !finished(); ++i) {
    std::int64_t sid = -1;
    int fin = 0;
    std::array<nghttp3_vec, 16> vec;
    nghttp3_ssize cnt = 0;
    if (h3_) {
      cnt = nghttp3_conn_writev_stream(h3_, &sid, &fin, vec.data(), vec.size());
      if (cnt < 0) return on_write_error(WriteError::http3, static_cast<int>(cnt), now);
    }
    ngtcp2_ssize ndatalen = -1;
    const std::uint32_t flags =
        NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    ngtcp2_pkt_info pi{};
    const auto n = ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, buf.data(), buf.size(),
                                             &ndatalen, flags, sid,
                                             reinterpret_cast<const ngtcp2_vec*>(vec.data()),
                                             static_cast<std::size_t>(cnt), now);
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        nghttp3_conn_block_stream(h3_, sid);
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
        nghttp3_conn_shutdown_stream_write(h3_, sid);
        continue;
      }
      if (n == NGTCP2_ERR_WRITE_MORE) {
        nghttp3_conn_add_write_offset(h3_, sid, ndatalen);
        continue;
      }
      return on_write_error(WriteError::quic, static_cast<int>(n), now);
    }
    if (ndatalen >= 0 && h3_) nghttp3_conn_add_write_offset(h3_, sid, ndatalen);
    if (n == 0) break;
    if (!send_packet(ps.path, buf.data(), static_cast<std::size_t>(n), now)) return;
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, now);
}

std::size_t ClientConnection::write_close(std::span<std::uint8_t> buf, ngtcp2_tstamp now) {
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi{};
  ngtcp2_connection_close_error ccerr;
  ngtcp2_connection_close_error_default(&ccerr);
  const auto n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf.data(),
                                                    buf.size(), &ccerr, now);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

void ClientConnection::consumed(std::int64_t id, std::uint64_t n) {
  ngtcp2_conn_extend_max_stream_offset(conn_, id, n);
  ngtcp2_conn_extend_max_offset(conn_, n);
}

}  // namespace quicstep::quic
