// Connection: one QUIC connection of a worker — ngtcp2 0.12.1 server conn, its GnuTLS
// session, its HTTP/3 session — and the migration policy applied to it. Sans-clock: every
// entry takes the current timestamp. Sends through the owning Worker.
#pragma once

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <cstdio>
#include <memory>
#include <string>
#include <unordered_set>

#include "server_testbed/http3_session.hpp"

namespace quicstep::server_testbed {

class Worker;

// What the worker learned from the client's first Initial.
struct AcceptInfo {
  ngtcp2_pkt_hd hd{};                     // ngtcp2_accept's parse (dcid, scid, token, version)
  const ngtcp2_cid* odcid = nullptr;      // original DCID when a Retry token was validated
  sockaddr_storage local{};
  sockaddr_storage remote{};
};

class Connection {
 public:
  enum class Status { ok, closing, remove };

  // nullptr when ngtcp2 or GnuTLS refuse (counted by the worker as rejected).
  static std::unique_ptr<Connection> create(Worker& worker, const AcceptInfo& info,
                                            ngtcp2_tstamp now);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A datagram whose DCID maps to this connection. Applies the migration policy first.
  Status on_datagram(const sockaddr_storage& from, const std::uint8_t* data, std::size_t len,
                     std::uint32_t ecn, ngtcp2_tstamp now);
  // Timers (loss, ACK, pacing, idle) and the closing/draining deadline.
  Status on_expiry(ngtcp2_tstamp now);
  // Writes what ngtcp2/nghttp3 have to send (bounded per call).
  Status write(ngtcp2_tstamp now);
  ngtcp2_tstamp next_deadline() const;

  // CIDs the worker maps to this connection (kept here so removal unmaps them all).
  std::unordered_set<std::string>& cid_keys() { return cid_keys_; }
  const ngtcp2_cid& scid() const { return scid_; }

  // Callback bodies (public for the C trampolines).
  int on_new_cid(ngtcp2_cid* cid, std::uint8_t* token, std::size_t cidlen);
  void on_remove_cid(const ngtcp2_cid* cid);
  int on_tx_key_application();
  int on_stream_data(std::uint32_t flags, std::int64_t id, const std::uint8_t* data,
                     std::size_t len);
  int on_acked_offset(std::int64_t id, std::uint64_t len);
  int on_stream_close(std::uint32_t flags, std::int64_t id, std::uint64_t code);
  int on_stream_shutdown_read(std::int64_t id);
  void on_extend_bidi(std::uint64_t max);
  int on_extend_stream_data(std::int64_t id);
  void on_handshake_completed();
  void on_path_validation(ngtcp2_path_validation_result res);
  // ngtcp2's qlog writer (settings.qlog.write, --qlog-dir): appends to this connection's qlog.
  void write_qlog(const void* data, std::size_t len, bool fin);
  ngtcp2_conn* conn() const { return conn_; }

 private:
  Connection(Worker& worker, const AcceptInfo& info);
  int init(const AcceptInfo& info, ngtcp2_tstamp now);
  Status start_closing(int liberr, ngtcp2_tstamp now);
  Status fail_application(int h3err, ngtcp2_tstamp now);
  void send(const ngtcp2_path& path, const std::uint8_t* data, std::size_t len);
  // The time ngtcp2 paces the flight just written from (--unpaced-first-flight).
  ngtcp2_tstamp paced_from(ngtcp2_tstamp now) const;

  Worker& worker_;
  sockaddr_storage local_{};
  sockaddr_storage original_remote_{};
  ngtcp2_cid scid_{};
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  std::unique_ptr<Http3Session> h3_;
  ngtcp2_connection_close_error ccerr_{};
  bool closing_ = false;
  ngtcp2_tstamp close_deadline_ = 0;
  std::unordered_set<std::string> cid_keys_;
  std::FILE* qlog_ = nullptr;  // --qlog-dir: this connection's qlog, closed with it
};

}  // namespace quicstep::server_testbed
