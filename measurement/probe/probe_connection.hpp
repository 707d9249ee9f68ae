// ProbeConnection: one try against one address, on the project's QUIC client
// (quic/client_connection.hpp): handshake, GET /, then the switch the try tests, then a second
// GET whose response must arrive on the new path. What is here is the try itself: its steps
// and their timeouts, its sockets, and the label.
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
#include <ngtcp2/ngtcp2.h>

#include <memory>
#include <optional>
#include <string>

#include "measurement/probe/probe_record.hpp"
#include "net/udp_socket.hpp"
#include "quic/client_connection.hpp"

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

class ProbeConnection : public quic::ClientConnection {
 public:
  // Failures: no socket (its text), or no ngtcp2/GnuTLS state.
  using Started = common::Result<std::unique_ptr<ProbeConnection>, common::Failure>;
  static Started start(const TryOptions& options, gnutls_certificate_credentials_t cred,
                       FdRegistry& registry, ngtcp2_tstamp now);
  ~ProbeConnection() override;

  void on_readable(int fd, ngtcp2_tstamp now);
  void on_expiry(ngtcp2_tstamp now);
  ngtcp2_tstamp next_deadline() const;
  bool finished() const override { return finished_; }
  const TryOutcome& outcome() const { return outcome_; }

 private:
  enum class Step { handshake, first_response, validating, second_response, done };

  ProbeConnection(const TryOptions& options, FdRegistry& registry)
      : options_(options), registry_(registry) {}
  common::Outcome init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now);

  // quic::ClientConnection's hooks.
  bool send_packet(const ngtcp2_path& path, const std::uint8_t* data, std::size_t len,
                   ngtcp2_tstamp now) override;
  void on_write_error(WriteError where, int rv, ngtcp2_tstamp now) override;
  int on_handshake_completed() override;
  void on_retry() override { outcome_.facts.retry = true; }
  void on_path_validation(bool success) override;
  void on_qlog(std::string_view text) override;
  void on_stream_data(std::int64_t id, std::size_t len) override;
  void on_header(std::int64_t id, std::int32_t token, std::string_view value) override;
  void on_end_stream(std::int64_t id) override;

  int submit_get(std::int64_t* stream_id);
  void collect_facts();
  void after_io(ngtcp2_tstamp now);
  void switch_path(ngtcp2_tstamp now);
  void read_socket(net::UdpSocket& sock, bool old_path, ngtcp2_tstamp now);
  void fail_step(ngtcp2_tstamp now);
  void on_read_error(int rv, ngtcp2_tstamp now);
  void finish(Label label, std::optional<std::string> error, ngtcp2_tstamp now);
  void close_sockets();

  TryOptions options_;
  FdRegistry& registry_;
  net::UdpSocket sock_;      // current path
  net::UdpSocket old_sock_;  // the first path, kept after the switch
  sockaddr_storage local_now_{};
  sockaddr_storage local_old_{};
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
