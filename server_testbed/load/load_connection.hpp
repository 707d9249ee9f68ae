// LoadConnection: one quicstep-load client connection, on the project's QUIC client
// (quic/client_connection.hpp): one GET of `size` bytes; after `migrate_after` body bytes it moves to a new local port, a new
// local address (active migration with path validation) or rebinds like a NAT. It measures
// the handover: first packet sent on the new path → first response data received on it.
// Hold mode (options.hold): the client grants the response stream only `migrate_after` bytes
// of credit, so the transfer stalls with data pending at the server; the caller migrates every
// held connection together (migrate_now) and the credit is released on the new path.
// Losses per connection come from ngtcp2's qlog (see LossCounter).
#pragma once

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>

#include <memory>
#include <string>
#include <utility>

#include "net/udp_socket.hpp"
#include "quic/client_connection.hpp"
#include "server_testbed/load/loss_counter.hpp"

namespace quicstep::server_testbed {

enum class LoadMigration { none, port, address, rebind };

struct LoadOptions {
  sockaddr_storage server{};
  sockaddr_storage local{};         // first local address (port 0)
  sockaddr_storage migrate_to{};    // address mode: the second local address
  std::uint64_t size = 1 << 20;     // body requested: GET /bytes/<size>
  std::uint64_t migrate_after = 256 << 10;  // body bytes received before migrating
  LoadMigration migration = LoadMigration::port;
  std::string authority = "localhost";
  bool hold = false;                // stall at migrate_after; migrate on migrate_now()
  bool count_losses = true;         // qlog-based loss counting (costs some CPU)
};

struct LoadResult {
  bool success = false;
  std::uint64_t bytes = 0;
  bool migrated = false;
  double handover_ms = -1;          // -1: no data on the new path
  double duration_ms = 0;
  double handshake_ms = -1;         // start to handshake completion (-1: never completed)
  std::uint64_t pto_count = 0;      // retransmission timeouts seen (losses show up here)
  std::uint64_t tx_datagrams = 0;   // datagrams sent (both paths)
  std::uint64_t rx_datagrams = 0;   // datagrams received (both paths)
  std::uint64_t tx_after_migration = 0;
  // Datagrams sent before the first from the server arrived: they carry the client-chosen
  // DCID (first Initials and their retransmissions), which the server cannot steer.
  std::uint64_t tx_before_reply = 0;
  std::uint64_t rx_old_path_after_migration = 0;  // datagrams on the old socket since then
  double min_rtt_ms = -1;           // ngtcp2's minimum RTT sample (the path's RTT)  // datagrams sent since the first on the new path
  LossCounts losses;                // whole connection
  LossCounts losses_after_migration;  // since the first packet on the new path
  std::string error;
};

class LoadConnection : public quic::ClientConnection {
 public:
  // Failures: the socket's, ngtcp2's or GnuTLS's.
  using Started = common::Result<std::unique_ptr<LoadConnection>, common::Failure>;
  static Started start(const LoadOptions& options, gnutls_certificate_credentials_t cred,
                       ngtcp2_tstamp now);

  void on_readable(int fd, ngtcp2_tstamp now);
  void on_expiry(ngtcp2_tstamp now);
  ngtcp2_tstamp next_deadline() const;
  bool finished() const override { return finished_; }
  // Hold mode: the response stalled at its credit, waiting for migrate_now().
  bool held() const { return options_.hold && !result_.migrated && response_rx_ >= hold_window_; }
  // Hold mode: migrate now and release the response's credit on the new path.
  void migrate_now(ngtcp2_tstamp now);
  const LoadResult& result() const { return result_; }
  int fd() const { return sock_.fd(); }
  int old_fd() const { return old_sock_.fd(); }
  // A socket appeared (migration): the caller registers it with its poller.
  bool take_new_fd() { return std::exchange(new_fd_, false); }

 private:
  explicit LoadConnection(const LoadOptions& options) : options_(options) {}
  common::Outcome init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now);
  void migrate(ngtcp2_tstamp now);
  void finish(bool success, const std::string& error, ngtcp2_tstamp now);

  // quic::ClientConnection's hooks.
  bool send_packet(const ngtcp2_path& path, const std::uint8_t* data, std::size_t len,
                   ngtcp2_tstamp now) override;
  void on_write_error(WriteError where, int rv, ngtcp2_tstamp now) override;
  int on_application_rx_key() override;
  int on_handshake_completed() override;
  void on_qlog(std::string_view text) override;
  void on_stream_data(std::int64_t id, std::size_t len) override;
  void on_body(std::int64_t id, std::size_t len) override;
  void on_end_stream(std::int64_t id) override;
  void consumed(std::int64_t id, std::uint64_t n) override;  // hold mode withholds credit

  LoadOptions options_;
  net::UdpSocket sock_;       // current path
  net::UdpSocket old_sock_;   // the path before migration, kept to drain in-flight packets
  sockaddr_storage local_now_{};
  LoadResult result_;
  ngtcp2_tstamp started_ = 0;
  ngtcp2_tstamp migrated_at_ = 0;   // first packet sent on the new path
  bool migrate_pending_ = false;
  bool reading_new_path_ = false;
  bool finished_ = false;
  bool new_fd_ = false;
  std::int64_t request_id_ = -1;
  std::uint64_t hold_window_ = 0;   // hold mode: response stream credit before migration
  std::uint64_t response_rx_ = 0;   // response stream bytes received (headers + body)
  std::uint64_t withheld_ = 0;      // hold mode: consumed bytes not yet credited back
  LossCounter loss_;
  LossCounts loss_at_migration_;
};

}  // namespace quicstep::server_testbed
