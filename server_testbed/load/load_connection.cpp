#include "server_testbed/load/load_connection.hpp"

#include "server_testbed/migration_policy.hpp"
#include "server_testbed/worker.hpp"  // monotonic_now

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>

namespace quicstep::server_testbed {

namespace {

constexpr char kPriority[] =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
    "+AES-256-GCM:+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1";
constexpr std::size_t kMaxWriteIterations = 64;

LoadConnection* self(void* ud) { return static_cast<LoadConnection*>(ud); }

void cb_rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_NONCE, dest, len);
}
int cb_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void*) {
  gnutls_rnd(GNUTLS_RND_NONCE, cid->data, cidlen);
  cid->datalen = cidlen;
  gnutls_rnd(GNUTLS_RND_NONCE, token, NGTCP2_STATELESS_RESET_TOKENLEN);
  return 0;
}
int cb_rx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* ud) {
  if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) return 0;
  return self(ud)->on_rx_key() == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_handshake_completed(ngtcp2_conn*, void* ud) {
  self(ud)->on_handshake_completed();
  return 0;
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
void cb_qlog(void* ud, uint32_t, const void* data, size_t len) { self(ud)->on_qlog(data, len); }
ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) {
  return static_cast<LoadConnection*>(ref->user_data)->conn();
}

int h3_recv_data(nghttp3_conn*, int64_t id, const uint8_t*, size_t len, void* ud, void*) {
  self(ud)->on_body(len);
  self(ud)->consumed(id, len);
  return 0;
}
int h3_deferred(nghttp3_conn*, int64_t id, size_t n, void* ud, void*) {
  self(ud)->consumed(id, n);
  return 0;
}
int h3_end_stream(nghttp3_conn*, int64_t, void* ud, void*) {
  self(ud)->on_body_end();
  return 0;
}

ngtcp2_path path_of(sockaddr_storage& local, sockaddr_storage& remote) {
  return {{reinterpret_cast<sockaddr*>(&local), sockaddr_len(local)},
          {reinterpret_cast<sockaddr*>(&remote), sockaddr_len(remote)}, nullptr};
}

// A client socket bound to addr (port 0); *bound gets the address with its port.
UdpSocket open_bound(const sockaddr_storage& addr, sockaddr_storage* bound, std::string* error) {
  UdpSocket s = UdpSocket::open_client(addr, sockaddr_len(addr), error);
  if (!s.valid()) return s;
  const int one = 1;  // kernel receive timestamps: handovers do not include our own delays
  setsockopt(s.fd(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
  socklen_t len = sizeof(*bound);
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(bound), &len);
  return s;
}

double ms(ngtcp2_tstamp d) { return static_cast<double>(d) / NGTCP2_MILLISECONDS; }

// One datagram with the kernel's receive time (SO_TIMESTAMPNS, CLOCK_REALTIME) converted to
// CLOCK_MONOTONIC; *rx_at = now when the kernel gave no timestamp. -1: nothing to read.
long recv_stamped(int fd, std::uint8_t* buf, std::size_t len, sockaddr_storage* from,
                  ngtcp2_tstamp now, ngtcp2_tstamp* rx_at) {
  iovec iov{buf, len};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(timespec))> control{};
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = sizeof(*from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  const long n = recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n < 0) return -1;
  *rx_at = now;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec rx{}, real{}, mono{};
    std::memcpy(&rx, CMSG_DATA(c), sizeof(rx));
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    auto ns = [](const timespec& t) {
      return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
    };
    const std::int64_t age = std::max<std::int64_t>(0, ns(real) - ns(rx));
    *rx_at = static_cast<ngtcp2_tstamp>(std::max<std::int64_t>(0, ns(mono) - age));
  }
  return n;
}

}  // namespace

std::unique_ptr<LoadConnection> LoadConnection::start(const LoadOptions& options,
                                                      gnutls_certificate_credentials_t cred,
                                                      ngtcp2_tstamp now, std::string* error) {
  std::unique_ptr<LoadConnection> c(new LoadConnection(options));
  if (c->init(cred, now, error) != 0) return nullptr;
  c->write(now);
  return c;
}

int LoadConnection::init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now,
                         std::string* error) {
  started_ = now;
  sock_ = open_bound(options_.local, &local_now_, error);
  if (!sock_.valid()) return -1;
  ngtcp2_callbacks cb{};
  cb.client_initial = ngtcp2_crypto_client_initial_cb;
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.recv_stream_data = cb_stream_data;
  cb.acked_stream_data_offset = cb_acked;
  cb.stream_close = cb_stream_close;
  cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
  cb.rand = cb_rand;
  cb.get_new_connection_id = cb_new_cid;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.extend_max_stream_data = cb_extend;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.recv_rx_key = cb_rx_key;
  cb.handshake_completed = cb_handshake_completed;
  ngtcp2_cid dcid{}, scid{};
  dcid.datalen = 18;
  scid.datalen = 17;
  gnutls_rnd(GNUTLS_RND_NONCE, dcid.data, dcid.datalen);
  gnutls_rnd(GNUTLS_RND_NONCE, scid.data, scid.datalen);
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now;
  settings.max_window = 24 << 20;
  settings.max_stream_window = 16 << 20;
  if (options_.count_losses) settings.qlog.write = cb_qlog;
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = 6 << 20;
  if (options_.hold) {
    // The response stalls after migrate_after stream bytes until migrate_now().
    hold_window_ = options_.migrate_after;
    params.initial_max_stream_data_bidi_local = hold_window_;
  }
  params.initial_max_stream_data_uni = 1 << 20;
  params.initial_max_data = 15 << 20;
  params.initial_max_streams_uni = 100;
  params.max_idle_timeout = 30 * NGTCP2_SECONDS;
  params.active_connection_id_limit = 7;
  sockaddr_storage remote = options_.server;
  ngtcp2_path path = path_of(local_now_, remote);
  if (ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                             &params, nullptr, this) != 0) {
    *error = "ngtcp2_conn_client_new";
    return -1;
  }
  conn_ref_ = {get_conn, this};
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>("h3")), 2};
  if (gnutls_init(&tls_, GNUTLS_CLIENT) != 0 ||
      gnutls_priority_set_direct(tls_, kPriority, nullptr) != 0 ||
      ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
      gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, cred) != 0 ||
      gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0 ||
      gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, options_.authority.data(),
                             options_.authority.size()) != 0) {
    *error = "GnuTLS client session";
    return -1;
  }
  gnutls_session_set_ptr(tls_, &conn_ref_);
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  // Held connections send nothing for seconds while the others open: keep them alive.
  if (options_.hold) ngtcp2_conn_set_keep_alive_timeout(conn_, 5 * NGTCP2_SECONDS);
  return 0;
}

LoadConnection::~LoadConnection() {
  if (h3_) nghttp3_conn_del(h3_);
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
}

void LoadConnection::on_handshake_completed() {
  // the callback carries no timestamp: the clock every `now` here comes from
  result_.handshake_ms = ms(monotonic_now() - started_);
}

int LoadConnection::on_rx_key() {
  nghttp3_callbacks cb{};
  cb.recv_data = h3_recv_data;
  cb.deferred_consume = h3_deferred;
  cb.end_stream = h3_end_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  if (nghttp3_conn_client_new(&h3_, &cb, &settings, nghttp3_mem_default(), this) != 0) return -1;
  std::int64_t ctrl = 0, enc = 0, dec = 0, req = 0;
  if (ngtcp2_conn_open_uni_stream(conn_, &ctrl, nullptr) != 0 ||
      nghttp3_conn_bind_control_stream(h3_, ctrl) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &enc, nullptr) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &dec, nullptr) != 0 ||
      nghttp3_conn_bind_qpack_streams(h3_, enc, dec) != 0 ||
      ngtcp2_conn_open_bidi_stream(conn_, &req, nullptr) != 0) {
    return -1;
  }
  request_id_ = req;
  const std::string path = "/bytes/" + std::to_string(options_.size);
  auto nv = [](std::string_view n, std::string_view v) {
    return nghttp3_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(),
                      v.size(), NGHTTP3_NV_FLAG_NONE};
  };
  const std::array<nghttp3_nv, 4> nva{nv(":method", "GET"), nv(":scheme", "https"),
                                      nv(":authority", options_.authority), nv(":path", path)};
  return nghttp3_conn_submit_request(h3_, req, nva.data(), nva.size(), nullptr, nullptr) == 0
             ? 0 : -1;
}

int LoadConnection::on_stream_data(std::uint32_t flags, std::int64_t id,
                                   const std::uint8_t* data, std::size_t len) {
  if (!h3_) return 0;
  const auto n = nghttp3_conn_read_stream(h3_, id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
  if (n < 0) return -1;
  if (id == request_id_) response_rx_ += len;
  consumed(id, static_cast<std::uint64_t>(n));
  return 0;
}

void LoadConnection::consumed(std::int64_t id, std::uint64_t n) {
  ngtcp2_conn_extend_max_offset(conn_, n);
  if (options_.hold && id == request_id_ && !result_.migrated) {
    withheld_ += n;  // credited back on the new path (migrate_now)
    return;
  }
  ngtcp2_conn_extend_max_stream_offset(conn_, id, n);
}

void LoadConnection::on_qlog(const void* data, std::size_t len) {
  loss_.feed(std::string_view(static_cast<const char*>(data), len));
  result_.losses = loss_.counts();
  if (migrated_at_ != 0) {
    const LossCounts& a = loss_at_migration_;
    result_.losses_after_migration = {result_.losses.declared_lost - a.declared_lost,
                                      result_.losses.missing - std::min(result_.losses.missing, a.missing),
                                      result_.losses.received - a.received};
  }
}

void LoadConnection::on_body(std::size_t len) {
  result_.bytes += len;
  if (result_.migrated && reading_new_path_ && result_.handover_ms < 0 && migrated_at_ != 0) {
    result_.handover_ms = -2;  // marked; the timestamp is taken in on_readable
  }
  if (options_.migration != LoadMigration::none && !options_.hold && !result_.migrated &&
      result_.bytes >= options_.migrate_after) {
    migrate_pending_ = true;
  }
}

void LoadConnection::on_body_end() { result_.success = result_.bytes == options_.size; }

int LoadConnection::on_acked(std::int64_t id, std::uint64_t len) {
  return h3_ && nghttp3_conn_add_ack_offset(h3_, id, len) != 0 ? -1 : 0;
}

int LoadConnection::on_stream_close(std::uint32_t flags, std::int64_t id, std::uint64_t code) {
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = NGHTTP3_H3_NO_ERROR;
  if (!h3_) return 0;
  const int rv = nghttp3_conn_close_stream(h3_, id, code);
  return rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND ? 0 : -1;
}

int LoadConnection::on_extend_stream_data(std::int64_t id) {
  return h3_ && nghttp3_conn_unblock_stream(h3_, id) != 0 ? -1 : 0;
}

void LoadConnection::migrate(ngtcp2_tstamp now) {
  migrate_pending_ = false;
  std::string error;
  sockaddr_storage bound{};
  const sockaddr_storage& addr =
      options_.migration == LoadMigration::address ? options_.migrate_to : options_.local;
  UdpSocket fresh = open_bound(addr, &bound, &error);
  if (!fresh.valid()) return finish(false, "migration socket: " + error, now);
  old_sock_ = std::move(sock_);
  sock_ = std::move(fresh);
  local_now_ = bound;
  new_fd_ = true;
  result_.migrated = true;
  ngtcp2_addr local{reinterpret_cast<sockaddr*>(&local_now_), sockaddr_len(local_now_)};
  if (options_.migration == LoadMigration::rebind) {
    ngtcp2_conn_set_local_addr(conn_, &local);
    return;
  }
  sockaddr_storage remote = options_.server;
  ngtcp2_path path = path_of(local_now_, remote);
  if (ngtcp2_conn_initiate_immediate_migration(conn_, &path, now) != 0) {
    finish(false, "ngtcp2_conn_initiate_immediate_migration refused", now);
  }
}

void LoadConnection::migrate_now(ngtcp2_tstamp now) {
  if (finished_ || result_.migrated) return;
  if (options_.migration != LoadMigration::none) migrate(now);
  if (finished_) return;
  result_.migrated = true;  // also for --migration none: the credit is released all the same
  ngtcp2_conn_extend_max_stream_offset(conn_, request_id_, std::exchange(withheld_, 0) +
                                                               options_.size);
  write(now);
}

void LoadConnection::on_readable(int fd, ngtcp2_tstamp now) {
  std::array<std::uint8_t, 65536> buf;
  for (int i = 0; i < 16 && !finished_; ++i) {
    sockaddr_storage from{};
    ngtcp2_tstamp rx_at = now;
    const long n = recv_stamped(fd, buf.data(), buf.size(), &from, now, &rx_at);
    if (n < 0) break;
    ++result_.rx_datagrams;
    if (result_.migrated && fd != sock_.fd()) ++result_.rx_old_path_after_migration;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    ngtcp2_path path = path_of(local, from);
    ngtcp2_pkt_info pi{};  // ECN not read: a load client does not need it
    reading_new_path_ = fd == sock_.fd();
    const int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, buf.data(),
                                        static_cast<std::size_t>(n), now);
    if (result_.handover_ms == -2) {
      // The kernel's arrival time of this datagram, not when this loop got to it.
      result_.handover_ms = ms(std::max(rx_at, migrated_at_) - migrated_at_);
      // The old socket stays open until the connection ends: what the server still sends
      // to the old path (probes, packets in flight) is received, not counted as lost.
    }
    if (rv != 0) return finish(false, std::string("read: ") + ngtcp2_strerror(rv), now);
    if (result_.success) return finish(true, "", now);
  }
  if (migrate_pending_) migrate(now);
  write(now);
}

void LoadConnection::on_expiry(ngtcp2_tstamp now) {
  if (finished_) return;
  const int rv = ngtcp2_conn_handle_expiry(conn_, now);
  ngtcp2_conn_stat stat{};
  ngtcp2_conn_get_conn_stat(conn_, &stat);
  result_.pto_count = stat.pto_count;  // kept current: a connection that never ends has one too
  if (stat.min_rtt != UINT64_MAX) result_.min_rtt_ms = ms(stat.min_rtt);
  if (rv != 0) return finish(false, std::string("expiry: ") + ngtcp2_strerror(rv), now);
  write(now);
}

ngtcp2_tstamp LoadConnection::next_deadline() const {
  return finished_ ? UINT64_MAX : ngtcp2_conn_get_expiry(conn_);
}

void LoadConnection::write(ngtcp2_tstamp now) {
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
      if (cnt < 0) return finish(false, "nghttp3_conn_writev_stream", now);
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
      return finish(false, std::string("write: ") + ngtcp2_strerror(static_cast<int>(n)), now);
    }
    if (ndatalen >= 0 && h3_) nghttp3_conn_add_write_offset(h3_, sid, ndatalen);
    if (n == 0) break;
    sockaddr_storage local{}, to{};
    std::memcpy(&local, ps.path.local.addr, std::min<std::size_t>(ps.path.local.addrlen, sizeof(local)));
    std::memcpy(&to, ps.path.remote.addr, std::min<std::size_t>(ps.path.remote.addrlen, sizeof(to)));
    const bool on_new = same_endpoint(local, local_now_) || !old_sock_.valid();
    const UdpSocket& s = on_new ? sock_ : old_sock_;
    if (on_new && result_.migrated && migrated_at_ == 0) {
      migrated_at_ = now;
      loss_at_migration_ = loss_.counts();
    }
    s.send(buf.data(), static_cast<std::size_t>(n), to, sockaddr_len(to));
    ++result_.tx_datagrams;
    if (migrated_at_ != 0) ++result_.tx_after_migration;
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, now);
}

void LoadConnection::finish(bool success, const std::string& error, ngtcp2_tstamp now) {
  if (finished_) return;
  finished_ = true;
  result_.success = success;
  result_.error = error;
  result_.duration_ms = ms(now - started_);
  ngtcp2_conn_stat stat{};
  ngtcp2_conn_get_conn_stat(conn_, &stat);
  result_.pto_count = stat.pto_count;
  if (stat.min_rtt != UINT64_MAX) result_.min_rtt_ms = ms(stat.min_rtt);
  if (success) {  // polite close, best effort
    std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi{};
    ngtcp2_connection_close_error ccerr;
    ngtcp2_connection_close_error_default(&ccerr);
    const auto n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf.data(),
                                                      buf.size(), &ccerr, now);
    if (n > 0) sock_.send(buf.data(), static_cast<std::size_t>(n), options_.server,
                          sockaddr_len(options_.server));
  }
}

}  // namespace quicstep::server_testbed
