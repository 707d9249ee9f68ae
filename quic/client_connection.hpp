// ClientConnection: the QUIC client that quicstep-probe's tries and quicstep-load's
// connections are built on (ngtcp2 0.12.1 + nghttp3 0.8.0, GnuTLS), in the manner of
// ngtcp2's examples/client_base: one ngtcp2 connection with its GnuTLS session and its HTTP/3
// connection; the callbacks every client needs; the settings and transport parameters a
// subclass chooses (ClientParams); reading a datagram into ngtcp2, the write loop, and an
// HTTP/3 GET. What differs between clients — their sockets, when and how they change paths,
// what a response means — lives in the subclass, behind the hooks below.
//
// Sans-clock: every call takes the caller's ngtcp2 timestamp. Ownership: the connection owns
// its ngtcp2, GnuTLS and nghttp3 objects (freed by the destructor, HTTP/3 first); the
// subclass owns its sockets; the credentials passed to init() must outlive the connection.
// Errors: init() returns an Outcome; start_http3() and submit_get() return 0 or -1, as
// ngtcp2's and nghttp3's callbacks want; read_packet() returns ngtcp2_conn_read_pkt's result;
// the write loop reports errors through on_write_error().
#pragma once

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace quicstep::quic {

struct ClientParams {
  // Transport parameters (RFC 9000 §18.2).
  std::uint64_t max_stream_data_bidi_local = 256 << 10;
  std::uint64_t max_stream_data_uni = 256 << 10;
  std::uint64_t max_data = 1 << 20;
  std::uint64_t max_streams_uni = 100;
  ngtcp2_duration max_idle_timeout = 30 * NGTCP2_SECONDS;
  std::uint64_t active_connection_id_limit = 7;
  // Bounds of ngtcp2's flow-control window auto-tuning; 0 keeps ngtcp2's default.
  std::uint64_t max_window = 0;
  std::uint64_t max_stream_window = 0;
  // Hand ngtcp2's qlog text to on_qlog() (costs CPU: a JSON text per event).
  bool qlog = false;
  std::string sni;         // TLS server name
  std::string alpn = "h3";
};

class ClientConnection {
 public:
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  ngtcp2_conn* conn() const { return conn_; }

 protected:
  enum class WriteError { http3, quic };

  ClientConnection() = default;
  virtual ~ClientConnection();

  // Creates the connection from `local` (bound, with its port) to `remote` with random
  // connection IDs (18-byte DCID, 17-byte SCID), QUIC v1, and its GnuTLS client session
  // (kClientPriority, ALPN and SNI from `params`, certificate credentials `cred`, which are
  // not verified here). Failures: "ngtcp2_conn_client_new", "GnuTLS client session".
  common::Outcome init(const ClientParams& params, gnutls_certificate_credentials_t cred,
                       const sockaddr_storage& local, const sockaddr_storage& remote,
                       ngtcp2_tstamp now);
  // Creates the HTTP/3 client and binds its control and QPACK streams. 0 or -1.
  int start_http3();
  // Opens a request stream (*stream_id) and submits GET https://authority/path, with a
  // user-agent header unless it is empty. Precondition: start_http3() succeeded. 0 or -1.
  int submit_get(std::string_view authority, std::string_view path,
                 std::string_view user_agent, std::int64_t* stream_id);
  // Hands one datagram that arrived on local <- remote to ngtcp2; its result (0, or an
  // NGTCP2_ERR_*).
  int read_packet(const sockaddr_storage& local, const sockaddr_storage& remote,
                  std::uint32_t ecn, const std::uint8_t* data, std::size_t len,
                  ngtcp2_tstamp now);
  // Writes what ngtcp2 and nghttp3 have to send: at most 64 packets, each through
  // send_packet(), then updates ngtcp2's transmission time. Stops early once finished(),
  // when send_packet() returns false, or on an error (on_write_error(); neither of the
  // last two updates the transmission time).
  void write_packets(ngtcp2_tstamp now);
  // A CONNECTION_CLOSE without error into `buf`; its length, or 0 when ngtcp2 writes none.
  std::size_t write_close(std::span<std::uint8_t> buf, ngtcp2_tstamp now);

  // --- What the subclass decides ---
  virtual bool finished() const = 0;
  // One packet of write_packets() on the path ngtcp2 chose. false: stop writing now.
  virtual bool send_packet(const ngtcp2_path& path, const std::uint8_t* data, std::size_t len,
                           ngtcp2_tstamp now) = 0;
  // nghttp3 (http3) or ngtcp2 (quic) refused to write: rv is their error code.
  virtual void on_write_error(WriteError where, int rv, ngtcp2_tstamp now) = 0;
  // The callbacks' hooks; non-zero from the int ones fails the connection's callback.
  virtual int on_handshake_completed() { return 0; }
  virtual int on_application_rx_key() { return 0; }  // 1-RTT keys to read are installed
  virtual void on_retry() {}
  virtual void on_path_validation(bool /*success*/) {}
  virtual void on_qlog(std::string_view /*text*/) {}
  // `len` bytes of stream `id` arrived, before HTTP/3 reads them.
  virtual void on_stream_data(std::int64_t /*id*/, std::size_t /*len*/) {}
  virtual void on_header(std::int64_t /*id*/, std::int32_t /*token*/,
                         std::string_view /*value*/) {}
  virtual void on_body(std::int64_t /*id*/, std::size_t /*len*/) {}
  virtual void on_end_stream(std::int64_t /*id*/) {}
  // `n` bytes of stream `id` were consumed: gives the server that much credit back, for the
  // connection and the stream. A subclass may withhold the stream's.
  virtual void consumed(std::int64_t id, std::uint64_t n);

  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  nghttp3_conn* h3_ = nullptr;

 private:
  friend struct ClientCallbacks;  // the C callbacks (client_connection.cpp)

  ngtcp2_crypto_conn_ref conn_ref_{};
};

}  // namespace quicstep::quic
