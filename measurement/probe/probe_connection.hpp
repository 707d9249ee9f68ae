// ProbeConnection: one try against one address (ngtcp2 0.12.1 client + nghttp3 0.8.0):
// handshake, GET /, then the switch the try tests, then a second GET whose response must
// arrive on the new path.
//   nat_rebinding      a new socket (new port), the SAME connection ID, no client path
//                      validation: the server sees an address change it did not ask for.
//   port_migration     a new socket, a new connection ID from the server's spares, path
//                      validation (ngtcp2_conn_initiate_migration); GET after validation.
//   address_migration  the same from the second local address.
// The old socket stays open and read until the try ends: anything for the second request
// arriving there makes the label response_on_old_path. Packets read there after the switch
// are handed to ngtcp2 as if on its current path, so their content can be attributed.
// Every step (handshake, first response, after the switch) has its own timeout.
#pragma once

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <memory>
#include <optional>
#include <string>

#include "measurement/probe/probe_record.hpp"
#include "server_testbed/udp_socket.hpp"

namespace quicstep::measurement::probe {

enum class TryKind { nat_rebinding, port_migration, address_migration };

struct TryOptions {
  sockaddr_storage server{};
  sockaddr_storage local{};         // first local address (wildcard allowed), port 0
  sockaddr_storage second_local{};  // address_migration: the second local address
  TryKind kind = TryKind::nat_rebinding;
  std::string sni;                  // SNI and :authority
  std::string alpn = "h3";
  ngtcp2_duration step_timeout = 5 * NGTCP2_SECONDS;
  // When non-zero (and shorter than step_timeout): the handshake fails as "timeout" if no
  // packet at all came from the server by then; the first packet extends the handshake's
  // deadline to step_timeout after the start. ngtcp2 resends the first Initial after its
  // first PTO (about 1 s with its default initial RTT of 333 ms).
  ngtcp2_duration first_answer_timeout = 0;
};

struct TryOutcome {
  bool handshake_done = false;
  bool first_response = false;       // GET / completed (facts are complete)
  std::optional<std::string> error;  // timeout, icmp_unreachable, handshake_failed,
                                     // version_negotiation, connection_closed,
                                     // response_timeout, socket: ...
  ConnectionFacts facts;
  Label label = Label::not_run;      // the test's label for this try
};

// Told about the sockets a connection opens and closes (the event loop's epoll set).
class FdRegistry {
 public:
  virtual ~FdRegistry() = default;
  virtual void watch(int fd, class ProbeConnection* owner) = 0;
  virtual void unwatch(int fd) = 0;
};

class ProbeConnection {
 public:
  // nullptr with *error when no socket or ngtcp2/GnuTLS state could be made.
  static std::unique_ptr<ProbeConnection> start(const TryOptions& options,
                                                gnutls_certificate_credentials_t cred,
                                                FdRegistry& registry, ngtcp2_tstamp now,
                                                std::string* error);
  ~ProbeConnection();
  ProbeConnection(const ProbeConnection&) = delete;
  ProbeConnection& operator=(const ProbeConnection&) = delete;

  void on_readable(int fd, ngtcp2_tstamp now);
  void on_expiry(ngtcp2_tstamp now);
  ngtcp2_tstamp next_deadline() const;
  bool finished() const { return finished_; }
  const TryOutcome& outcome() const { return outcome_; }

  // Callback bodies (ngtcp2 / nghttp3 / qlog).
  ngtcp2_conn* conn() const { return conn_; }
  int on_handshake_completed(ngtcp2_tstamp now);
  int on_stream_data(std::uint32_t flags, std::int64_t id, const std::uint8_t* data,
                     std::size_t len);
  void on_header(std::int64_t id, std::int32_t token, nghttp3_rcbuf* value);
  void on_end_stream(std::int64_t id);
  int on_acked(std::int64_t id, std::uint64_t len);
  int on_stream_close(std::uint32_t flags, std::int64_t id, std::uint64_t code);
  int on_extend_stream_data(std::int64_t id);
  void on_retry() { outcome_.facts.retry = true; }
  void on_path_validation(bool success);
  void on_qlog(const void* data, std::size_t len);

 private:
  enum class Step { handshake, first_response, validating, second_response, done };

  ProbeConnection(const TryOptions& options, FdRegistry& registry)
      : options_(options), registry_(registry) {}
  int init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now, std::string* error);
  int init_http3();
  int submit_get(std::int64_t* stream_id);
  void collect_facts();
  void after_io(ngtcp2_tstamp now);
  void switch_path(ngtcp2_tstamp now);
  void read_socket(server_testbed::UdpSocket& sock, bool old_path, ngtcp2_tstamp now);
  void write(ngtcp2_tstamp now);
  void fail_step(ngtcp2_tstamp now);
  void on_read_error(int rv, ngtcp2_tstamp now);
  void finish(Label label, std::optional<std::string> error, ngtcp2_tstamp now);
  void close_sockets();

  TryOptions options_;
  FdRegistry& registry_;
  server_testbed::UdpSocket sock_;      // current path
  server_testbed::UdpSocket old_sock_;  // the first path, kept after the switch
  sockaddr_storage local_now_{};
  sockaddr_storage local_old_{};
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  nghttp3_conn* h3_ = nullptr;
  TryOutcome outcome_;
  Step step_ = Step::handshake;
  ngtcp2_tstamp started_ = 0;
  ngtcp2_tstamp last_ts_ = 0;       // the latest time passed in
  ngtcp2_tstamp step_deadline_ = 0;
  std::int64_t first_stream_ = -1;
  std::int64_t second_stream_ = -1;
  std::size_t second_on_old_ = 0;   // second-response stream bytes read from the old socket
  bool reading_old_ = false;
  bool switch_pending_ = false;
  bool icmp_seen_ = false;
  bool answered_ = false;  // a packet from the server was read during the handshake
  bool pv_result_pending_ = false;
  bool pv_success_ = false;
  bool facts_collected_ = false;
  bool finished_ = false;
};

}  // namespace quicstep::measurement::probe
