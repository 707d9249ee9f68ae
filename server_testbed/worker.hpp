// Worker: one thread, one SO_REUSEPORT socket, the connections it accepted. It decodes each
// datagram's DCID: a known CID goes to its connection; an Initial creates a connection
// (host Retry first when configured); a short-header or Handshake DCID naming another worker
// is counted as misdirected and dropped — without steering that is the migration stall.
#pragma once

#include <ngtcp2/ngtcp2.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/deadline_heap.hpp"
#include "net/udp_socket.hpp"
#include "server_testbed/address_validator.hpp"
#include "server_testbed/cid_codec.hpp"
#include "server_testbed/connection.hpp"
#include "server_testbed/server_config.hpp"
#include "server_testbed/tls_context.hpp"
#include "server_testbed/worker_counters.hpp"

namespace quicstep::server_testbed {

// Key for stateless reset tokens and Retry tokens, shared by all workers (any worker must
// validate a token another one issued).
using StaticSecret = std::array<std::uint8_t, 32>;

class Worker {
 public:
  Worker(std::uint32_t id, const ServerConfig& config, const CidCodec& codec,
         const TlsContext& tls, const StaticSecret& secret, net::UdpSocket socket);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Gate mode: the unix datagram socket on which quicstep-gate forwards verified Initials
  // (owned from here on).
  void attach_gate_socket(int fd);
  // One message from the gate (gate_forward.hpp), public for tests.
  void on_forwarded(const std::uint8_t* data, std::size_t len, ngtcp2_tstamp now);
  // Called by a connection whose handshake completed: issues a NEW_TOKEN when validating.
  void on_handshake_completed(ngtcp2_conn* conn);
  // Counters as JSON: WorkerCounters plus the token counters.
  nlohmann::json stats_json() const;

  // The loop; returns when stop is set (checked at least every 100 ms).
  void run(const std::atomic<bool>& stop);

  // One datagram (public so tests could drive a worker without a thread).
  void on_datagram(const std::uint8_t* data, std::size_t len, const sockaddr_storage& from,
                   std::uint32_t ecn, ngtcp2_tstamp now);

  // For connections.
  const ServerConfig& config() const { return config_; }
  WorkerCounters& counters() { return counters_; }
  const WorkerCounters& counters() const { return counters_; }
  const TlsContext& tls() const { return tls_; }
  void make_cid(ngtcp2_cid* cid) const;
  void reset_token(std::uint8_t* token, const ngtcp2_cid* cid) const;
  void associate(const ngtcp2_cid& cid, Connection* conn);
  void dissociate(const ngtcp2_cid& cid);
  void send(const std::uint8_t* data, std::size_t len, const sockaddr_storage& to);
  std::uint32_t id() const { return id_; }
  int fd() const { return socket_.fd(); }

 private:
  void accept(const std::uint8_t* data, std::size_t len, const sockaddr_storage& from,
              std::uint32_t ecn, ngtcp2_tstamp now, const AddressValidator::Outcome* forwarded);
  void drain_gate_socket(std::vector<std::uint8_t>& buf);
  void not_found(const std::uint8_t* dcid, std::size_t dcidlen);
  void send_retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& to);
  void create(AcceptInfo& info, const std::uint8_t* data, std::size_t len,
              const sockaddr_storage& from, std::uint32_t ecn, ngtcp2_tstamp now);
  void send_version_negotiation(const ngtcp2_version_cid& vc, const sockaddr_storage& to);
  void handle(Connection* conn, Connection::Status status);
  void remove(Connection* conn);
  void run_timers(ngtcp2_tstamp now);
  ngtcp2_tstamp next_deadline() const;

  std::uint32_t id_;
  const ServerConfig& config_;
  const CidCodec& codec_;
  const TlsContext& tls_;
  const StaticSecret& secret_;
  net::UdpSocket socket_;
  WorkerCounters counters_;
  TokenCounters token_counters_;
  std::unique_ptr<AddressValidator> validator_;
  int gate_fd_ = -1;
  std::atomic<std::uint64_t> forwarded_seen_{0};
  std::unordered_map<std::string, Connection*> by_cid_;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> conns_;
  common::DeadlineHeap<Connection*> timers_;  // every connection's next deadline (set in handle())
};

}  // namespace quicstep::server_testbed
