#include "server_testbed/connection.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "quic/path.hpp"
#include "quic/crypto_callbacks.hpp"
#include "server_testbed/worker.hpp"

namespace quicstep::server_testbed {

namespace {

constexpr std::size_t kMaxWriteIterations = 256;  // per write() call: bounded, fair
Connection* self(void* ud) { return static_cast<Connection*>(ud); }

int cb_handshake_completed(ngtcp2_conn*, void* ud) {
  self(ud)->on_handshake_completed();
  return 0;
}
int cb_recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t, const uint8_t* data,
                        size_t len, void* ud, void*) {
  return self(ud)->on_stream_data(flags, id, data, len) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_acked_offset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t len, void* ud, void*) {
  return self(ud)->on_acked_offset(id, len) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_stream_close(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t code, void* ud, void*) {
  return self(ud)->on_stream_close(flags, id, code) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_stream_reset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t, void* ud, void*) {
  return self(ud)->on_stream_shutdown_read(id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_stop_sending(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
  return self(ud)->on_stream_shutdown_read(id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void* ud) {
  return self(ud)->on_new_cid(cid, token, cidlen) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_remove_cid(ngtcp2_conn*, const ngtcp2_cid* cid, void* ud) {
  self(ud)->on_remove_cid(cid);
  return 0;
}
int cb_path_validation(ngtcp2_conn*, uint32_t, const ngtcp2_path*,
                       ngtcp2_path_validation_result res, void* ud) {
  self(ud)->on_path_validation(res);
  return 0;
}
int cb_extend_bidi(ngtcp2_conn*, uint64_t max, void* ud) {
  self(ud)->on_extend_bidi(max);
  return 0;
}
int cb_extend_stream_data(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
  return self(ud)->on_extend_stream_data(id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
int cb_recv_tx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* ud) {
  if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) return 0;
  return self(ud)->on_tx_key_application() == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}
ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) {
  return static_cast<Connection*>(ref->user_data)->conn();
}

ngtcp2_callbacks make_callbacks() {
  ngtcp2_callbacks cb{};
  quic::set_crypto_callbacks(cb);
  cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  cb.handshake_completed = cb_handshake_completed;
  cb.recv_stream_data = cb_recv_stream_data;
  cb.acked_stream_data_offset = cb_acked_offset;
  cb.stream_close = cb_stream_close;
  cb.get_new_connection_id = cb_new_cid;
  cb.remove_connection_id = cb_remove_cid;
  cb.path_validation = cb_path_validation;
  cb.stream_reset = cb_stream_reset;
  cb.extend_max_remote_streams_bidi = cb_extend_bidi;
  cb.extend_max_stream_data = cb_extend_stream_data;
  cb.stream_stop_sending = cb_stop_sending;
  cb.recv_tx_key = cb_recv_tx_key;
  return cb;
}

}  // namespace

Connection::Connection(Worker& worker, const AcceptInfo& info)
    : worker_(worker), local_(info.local), original_remote_(info.remote) {}

std::unique_ptr<Connection> Connection::create(Worker& worker, const AcceptInfo& info,
                                               ngtcp2_tstamp now) {
  std::unique_ptr<Connection> c(new Connection(worker, info));
  if (c->init(info, now) != 0) return nullptr;
  return c;
}

int Connection::init(const AcceptInfo& info, ngtcp2_tstamp now) {
  const ServerConfig& cfg = worker_.config();
  worker_.make_cid(&scid_);
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now;
  settings.token = info.hd.token;
  settings.max_window = 24 << 20;
  settings.max_stream_window = 16 << 20;

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = 256 << 10;
  params.initial_max_stream_data_bidi_remote = 256 << 10;
  params.initial_max_stream_data_uni = 256 << 10;
  params.initial_max_data = 1 << 20;
  params.initial_max_streams_bidi = 100;
  params.initial_max_streams_uni = 3;
  params.max_idle_timeout = cfg.idle_timeout_ms * NGTCP2_MILLISECONDS;
  params.active_connection_id_limit = 7;
  params.disable_active_migration = disables_active_migration(cfg.migration) ? 1 : 0;
  params.stateless_reset_token_present = 1;
  worker_.reset_token(params.stateless_reset_token, &scid_);
  if (info.odcid) {
    params.original_dcid = *info.odcid;
    params.retry_scid = info.hd.dcid;
    params.retry_scid_present = 1;
  } else {
    params.original_dcid = info.hd.dcid;
  }

  if (!cfg.qlog_dir.empty()) {
    // Named after the client's original DCID, as ngtcp2's example server names its qlogs.
    std::string name = cfg.qlog_dir + "/";
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < params.original_dcid.datalen; ++i) {
      name += kHex[params.original_dcid.data[i] >> 4];
      name += kHex[params.original_dcid.data[i] & 0xf];
    }
    qlog_ = std::fopen((name + ".sqlog").c_str(), "w");  // none written if it cannot open
    if (qlog_) {
      // Line-buffered: every record (JSON-SEQ ends each with a newline) is in the file as
      // soon as it is written, so a reader need not wait for the connection to end.
      std::setvbuf(qlog_, nullptr, _IOLBF, 1 << 16);
      settings.qlog.odcid = params.original_dcid;
      settings.qlog.write = [](void* user_data, std::uint32_t flags, const void* data,
                               std::size_t len) {
        static_cast<Connection*>(user_data)->write_qlog(data, len,
                                                        flags & NGTCP2_QLOG_WRITE_FLAG_FIN);
      };
    }
  }

  const ngtcp2_callbacks callbacks = make_callbacks();
  ngtcp2_path path = quic::make_path(local_, original_remote_);
  if (ngtcp2_conn_server_new(&conn_, &info.hd.scid, &scid_, &path, info.hd.version, &callbacks,
                             &settings, &params, nullptr, this) != 0) {
    return -1;
  }
  conn_ref_.get_conn = get_conn;
  conn_ref_.user_data = this;
  tls_ = worker_.tls().new_session(&conn_ref_);
  if (tls_ == nullptr) return -1;
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  return 0;
}

Connection::~Connection() {
  h3_.reset();
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
  if (qlog_) std::fclose(qlog_);
}

void Connection::write_qlog(const void* data, std::size_t len, bool fin) {
  if (!qlog_) return;
  std::fwrite(data, 1, len, qlog_);
  if (fin) {
    std::fclose(qlog_);
    qlog_ = nullptr;
  }
}

Connection::Status Connection::on_datagram(const sockaddr_storage& from, const std::uint8_t* data,
                                           std::size_t len, std::uint32_t ecn, ngtcp2_tstamp now) {
  if (closing_) {
    return now >= close_deadline_ ? Status::remove : Status::closing;
  }
  if (!accept_packet_from(worker_.config().migration, original_remote_, from)) {
    WorkerCounters::add(worker_.counters().policy_ignored);
    return Status::ok;
  }
  sockaddr_storage remote = from;
  ngtcp2_path path = quic::make_path(local_, remote);
  ngtcp2_pkt_info pi{};
  pi.ecn = ecn;
  const int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, data, len, now);
  if (rv == 0) return write(now);
  if (rv == NGTCP2_ERR_DRAINING) {
    closing_ = true;
    close_deadline_ = now + 3 * ngtcp2_conn_get_pto(conn_);
    return Status::closing;
  }
  if (rv == NGTCP2_ERR_DROP_CONN || rv == NGTCP2_ERR_RETRY) return Status::remove;
  if (rv == NGTCP2_ERR_CRYPTO && ccerr_.error_code == 0) {
    ngtcp2_connection_close_error_set_transport_error_tls_alert(
        &ccerr_, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
  }
  return start_closing(rv, now);
}

Connection::Status Connection::on_expiry(ngtcp2_tstamp now) {
  if (closing_) return now >= close_deadline_ ? Status::remove : Status::closing;
  if (h3_) h3_->answer_due(now);  // responses whose think time ended
  if (ngtcp2_conn_get_expiry(conn_) <= now) {
    const int rv = ngtcp2_conn_handle_expiry(conn_, now);
    if (rv == NGTCP2_ERR_IDLE_CLOSE) return Status::remove;
    if (rv != 0) return start_closing(rv, now);
  }
  return write(now);
}

ngtcp2_tstamp Connection::next_deadline() const {
  if (closing_) return close_deadline_;
  const ngtcp2_tstamp quic = ngtcp2_conn_get_expiry(conn_);
  return h3_ ? std::min(quic, h3_->next_answer()) : quic;
}

Connection::Status Connection::start_closing(int liberr, ngtcp2_tstamp now) {
  if (closing_) return Status::closing;
  closing_ = true;
  close_deadline_ = now + 3 * ngtcp2_conn_get_pto(conn_);
  if (ngtcp2_conn_is_in_closing_period(conn_) || ngtcp2_conn_is_in_draining_period(conn_)) {
    return Status::closing;
  }
  if (ccerr_.error_code == 0 && ccerr_.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT) {
    ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr_, liberr, nullptr, 0);
  }
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi{};
  const auto n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf.data(),
                                                    buf.size(), &ccerr_, now);
  if (n > 0) send(ps.path, buf.data(), static_cast<std::size_t>(n));
  return Status::closing;
}

Connection::Status Connection::fail_application(int h3err, ngtcp2_tstamp now) {
  ngtcp2_connection_close_error_set_application_error(
      &ccerr_, nghttp3_err_infer_quic_app_error_code(h3err), nullptr, 0);
  return start_closing(NGTCP2_ERR_CALLBACK_FAILURE, now);
}

void Connection::send(const ngtcp2_path& path, const std::uint8_t* data, std::size_t len) {
  const sockaddr_storage to = quic::to_sockaddr(path.remote);
  worker_.send(data, len, send_address(worker_.config().migration, original_remote_, to));
}

Connection::Status Connection::write(ngtcp2_tstamp now) {
  if (closing_) return Status::closing;
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
  const std::size_t max_udp = ngtcp2_conn_get_max_tx_udp_payload_size(conn_);
  const std::size_t quantum = ngtcp2_conn_get_send_quantum(conn_) / max_udp + 1;
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  std::size_t packets = 0;
  for (std::size_t i = 0; i < kMaxWriteIterations && packets < quantum; ++i) {
    std::int64_t stream_id = -1;
    int fin = 0;
    std::array<nghttp3_vec, 16> vec;
    nghttp3_ssize veccnt = 0;
    if (h3_ && ngtcp2_conn_get_max_data_left(conn_)) {
      veccnt = nghttp3_conn_writev_stream(h3_->raw(), &stream_id, &fin, vec.data(), vec.size());
      if (veccnt < 0) return fail_application(static_cast<int>(veccnt), now);
    }
    ngtcp2_ssize ndatalen = -1;
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    ngtcp2_pkt_info pi{};
    const auto nwrite = ngtcp2_conn_writev_stream(
        conn_, &ps.path, &pi, buf.data(), std::min(max_udp, buf.size()), &ndatalen, flags,
        stream_id, reinterpret_cast<const ngtcp2_vec*>(vec.data()),
        static_cast<std::size_t>(veccnt), now);
    if (nwrite < 0) {
      if (nwrite == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        nghttp3_conn_block_stream(h3_->raw(), stream_id);
        continue;
      }
      if (nwrite == NGTCP2_ERR_STREAM_SHUT_WR) {
        nghttp3_conn_shutdown_stream_write(h3_->raw(), stream_id);
        continue;
      }
      if (nwrite == NGTCP2_ERR_WRITE_MORE) {
        if (int rv = nghttp3_conn_add_write_offset(h3_->raw(), stream_id, ndatalen); rv != 0) {
          return fail_application(rv, now);
        }
        continue;
      }
      return start_closing(static_cast<int>(nwrite), now);
    }
    if (ndatalen >= 0 && h3_) {
      if (int rv = nghttp3_conn_add_write_offset(h3_->raw(), stream_id, ndatalen); rv != 0) {
        return fail_application(rv, now);
      }
    }
    if (nwrite == 0) break;
    send(ps.path, buf.data(), static_cast<std::size_t>(nwrite));
    ++packets;
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, paced_from(now));
  return Status::ok;
}

// ngtcp2 0.12.1 paces what was just written at cwnd x 1.25 per smoothed RTT and fixes the
// time of the next write then. Before the path's first RTT sample that RTT is the 333 ms
// initial value (RFC 9002 §6.2.2; reset on a new client address, RFC 9000 §9.4), so the
// flight written the moment a new path is validated holds the next one ~270 ms although
// the sample comes one RTT later (measurement/results/2026-12-05-pacing.md). ngtcp2 0.14
// and later pace at 1 ms until the first sample (its commit 47b8869). With
// --unpaced-first-flight the flight is charged from one smoothed RTT back: a flight of at
// most a congestion window lasts at most srtt / 1.25 at that rate, so the next write is
// due at once, as with the newer ngtcp2; what was written is still accounted.
ngtcp2_tstamp Connection::paced_from(ngtcp2_tstamp now) const {
  if (!worker_.config().unpaced_first_flight) return now;
  ngtcp2_conn_stat cstat;
  ngtcp2_conn_get_conn_stat(conn_, &cstat);
  if (cstat.first_rtt_sample_ts != UINT64_MAX || now <= cstat.smoothed_rtt) return now;
  return now - cstat.smoothed_rtt;
}

int Connection::on_new_cid(ngtcp2_cid* cid, std::uint8_t* token, std::size_t cidlen) {
  (void)cidlen;  // the codec's length was announced via the SCID; ngtcp2 asks for the same
  worker_.make_cid(cid);
  worker_.reset_token(token, cid);
  worker_.associate(*cid, this);
  return 0;
}

void Connection::on_remove_cid(const ngtcp2_cid* cid) { worker_.dissociate(*cid); }

int Connection::on_tx_key_application() {
  if (h3_) return 0;
  Http3Options options{worker_.config().htdocs, worker_.config().max_body,
                      ngtcp2_duration{worker_.config().think_ms} * NGTCP2_MILLISECONDS};
  h3_ = std::make_unique<Http3Session>(conn_, options, worker_.counters());
  return h3_->setup();
}

int Connection::on_stream_data(std::uint32_t flags, std::int64_t id, const std::uint8_t* data,
                               std::size_t len) {
  if (!h3_) return 0;
  const auto consumed = nghttp3_conn_read_stream(h3_->raw(), id, data, len,
                                                 flags & NGTCP2_STREAM_DATA_FLAG_FIN);
  if (consumed < 0) {
    ngtcp2_connection_close_error_set_application_error(
        &ccerr_, nghttp3_err_infer_quic_app_error_code(static_cast<int>(consumed)), nullptr, 0);
    return -1;
  }
  ngtcp2_conn_extend_max_stream_offset(conn_, id, static_cast<std::uint64_t>(consumed));
  ngtcp2_conn_extend_max_offset(conn_, static_cast<std::uint64_t>(consumed));
  return 0;
}

int Connection::on_acked_offset(std::int64_t id, std::uint64_t len) {
  if (!h3_) return 0;
  return nghttp3_conn_add_ack_offset(h3_->raw(), id, len) == 0 ? 0 : -1;
}

int Connection::on_stream_close(std::uint32_t flags, std::int64_t id, std::uint64_t code) {
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = NGHTTP3_H3_NO_ERROR;
  if (!h3_) return 0;
  const int rv = nghttp3_conn_close_stream(h3_->raw(), id, code);
  if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) {
    if (ngtcp2_is_bidi_stream(id)) ngtcp2_conn_extend_max_streams_bidi(conn_, 1);
    return 0;
  }
  return rv == 0 ? 0 : -1;
}

int Connection::on_stream_shutdown_read(std::int64_t id) {
  if (!h3_) return 0;
  return nghttp3_conn_shutdown_stream_read(h3_->raw(), id) == 0 ? 0 : -1;
}

void Connection::on_extend_bidi(std::uint64_t max) {
  if (h3_) nghttp3_conn_set_max_client_streams_bidi(h3_->raw(), max);
}

int Connection::on_extend_stream_data(std::int64_t id) {
  if (!h3_) return 0;
  return nghttp3_conn_unblock_stream(h3_->raw(), id) == 0 ? 0 : -1;
}

void Connection::on_handshake_completed() {
  WorkerCounters::add(worker_.counters().handshakes);
  if (gnutls_session_get_flags(tls_) & GNUTLS_SFLAGS_EARLY_DATA) {
    WorkerCounters::add(worker_.counters().early_data_accepted);
  }
  // A session ticket for resumption and 0-RTT (GnuTLS does not send one by itself here).
  gnutls_session_ticket_send(tls_, 1, 0);
  worker_.on_handshake_completed(conn_);
}

void Connection::on_path_validation(ngtcp2_path_validation_result res) {
  WorkerCounters::add(res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS
                          ? worker_.counters().path_validated
                          : worker_.counters().path_failed);
}

}  // namespace quicstep::server_testbed
