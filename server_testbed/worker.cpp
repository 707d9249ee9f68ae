#include "server_testbed/worker.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cerrno>
#include <chrono>
#include <vector>

#include "quic/time.hpp"
#include "server_testbed/gate_forward.hpp"

namespace quicstep::server_testbed {

namespace {

constexpr std::size_t kRecvBatch = 64;                         // datagrams per wake-up
constexpr ngtcp2_tstamp kMaxWait = 100 * NGTCP2_MILLISECONDS;  // stop-flag latency
std::string key_of(const std::uint8_t* data, std::size_t len) {
  return std::string(reinterpret_cast<const char*>(data), len);
}

}  // namespace

Worker::Worker(std::uint32_t id, const ServerConfig& config, const CidCodec& codec,
               const TlsContext& tls, const StaticSecret& secret, net::UdpSocket socket)
    : id_(id), config_(config), codec_(codec), tls_(tls), secret_(secret),
      socket_(std::move(socket)) {
  // The master key was checked (length) when the config was built.
  auto token_codec = token::TokenCodec::create(config_.master_key, config_.token);
  if (token_codec) {
    validator_ = std::make_unique<AddressValidator>(std::move(*token_codec),
                                                    config_.validate_addresses(), token_counters_);
  }
}

Worker::~Worker() {
  by_cid_.clear();
  conns_.clear();
  if (gate_fd_ >= 0) close(gate_fd_);
}

void Worker::attach_gate_socket(int fd) {
  if (gate_fd_ >= 0) close(gate_fd_);
  gate_fd_ = fd;
}

nlohmann::json Worker::stats_json() const {
  nlohmann::json j = counters_.to_json();
  j.update(token_counters_.to_json());
  auto g = [](const TokenCounters::C& c) { return c.load(std::memory_order_relaxed); };
  j["retry_token_bad"] = g(token_counters_.token_invalid) + g(token_counters_.token_expired) +
                         g(token_counters_.token_replayed) + g(token_counters_.token_unknown_key);
  j["forwarded_in"] = forwarded_seen_.load(std::memory_order_relaxed);
  return j;
}

void Worker::on_handshake_completed(ngtcp2_conn* conn) {
  if (!validator_ || !validator_->require_validation()) return;
  const ngtcp2_path* path = ngtcp2_conn_get_path(conn);
  sockaddr_storage remote{};
  std::memcpy(&remote, path->remote.addr, std::min<std::size_t>(path->remote.addrlen, sizeof(remote)));
  std::array<std::uint8_t, token::kMaxTokenLen> tok{};
  const std::size_t n = validator_->make_new_token(tok, remote, wall_clock_ms());
  if (n > 0 && ngtcp2_conn_submit_new_token(conn, tok.data(), n) == 0) {
    TokenCounters::add(token_counters_.new_token_sent);
  }
}

void Worker::on_forwarded(const std::uint8_t* data, std::size_t len, ngtcp2_tstamp now) {
  auto msg = decode_forward({data, len});
  if (!msg) {
    WorkerCounters::add(counters_.malformed);
    return;
  }
  forwarded_seen_.fetch_add(1, std::memory_order_relaxed);
  WorkerCounters::add(counters_.rx_packets);
  WorkerCounters::add(counters_.rx_bytes, msg->packet.size());
  ngtcp2_version_cid vc{};
  if (ngtcp2_pkt_decode_version_cid(&vc, msg->packet.data(), msg->packet.size(),
                                    codec_.cid_len()) != 0) {
    WorkerCounters::add(counters_.malformed);
    return;
  }
  auto it = by_cid_.find(key_of(vc.dcid, vc.dcidlen));
  if (it != by_cid_.end()) {  // a resent Initial of a connection this worker has
    handle(it->second, it->second->on_datagram(msg->client, msg->packet.data(),
                                               msg->packet.size(), 0, now));
    return;
  }
  AddressValidator::Outcome outcome;
  outcome.action = AddressValidator::Action::accept;
  outcome.has_odcid = msg->has_odcid;
  outcome.odcid.datalen = msg->odcid_len;
  std::memcpy(outcome.odcid.data, msg->odcid.data(), msg->odcid_len);
  accept(msg->packet.data(), msg->packet.size(), msg->client, 0, now, &outcome);
}

void Worker::drain_gate_socket(std::vector<std::uint8_t>& buf) {
  for (std::size_t i = 0; i < kRecvBatch; ++i) {
    const ssize_t n = recv(gate_fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) break;
    on_forwarded(buf.data(), static_cast<std::size_t>(n), quic::now());
  }
}

void Worker::make_cid(ngtcp2_cid* cid) const {
  std::array<std::uint8_t, QS_STEER_MAX_CID_LEN> random{};
  gnutls_rnd(GNUTLS_RND_NONCE, random.data(), random.size());
  cid->datalen = codec_.cid_len();
  codec_.encode(id_, random, std::span<std::uint8_t>(cid->data, cid->datalen));
}

void Worker::reset_token(std::uint8_t* token, const ngtcp2_cid* cid) const {
  ngtcp2_crypto_generate_stateless_reset_token(token, secret_.data(), secret_.size(), cid);
}

void Worker::associate(const ngtcp2_cid& cid, Connection* conn) {
  auto key = key_of(cid.data, cid.datalen);
  by_cid_[key] = conn;
  conn->cid_keys().insert(std::move(key));
}

void Worker::dissociate(const ngtcp2_cid& cid) {
  const auto key = key_of(cid.data, cid.datalen);
  auto it = by_cid_.find(key);
  if (it == by_cid_.end()) return;
  it->second->cid_keys().erase(key);
  by_cid_.erase(it);
}

void Worker::send(const std::uint8_t* data, std::size_t len, const sockaddr_storage& to) {
  if (socket_.send(data, len, to, net::sockaddr_len(to))) {
    WorkerCounters::add(counters_.tx_packets);
    WorkerCounters::add(counters_.tx_bytes, len);
  } else {
    WorkerCounters::add(counters_.tx_dropped);  // do not fail on ENOBUFS/EAGAIN: QUIC recovers
  }
}

void Worker::on_datagram(const std::uint8_t* data, std::size_t len, const sockaddr_storage& from,
                         std::uint32_t ecn, ngtcp2_tstamp now) {
  WorkerCounters::add(counters_.rx_packets);
  WorkerCounters::add(counters_.rx_bytes, len);
  if (len == 0) {  // ngtcp2_pkt_decode_version_cid asserts datalen > 0
    WorkerCounters::add(counters_.malformed);
    return;
  }
  ngtcp2_version_cid vc{};
  const int rv = ngtcp2_pkt_decode_version_cid(&vc, data, len, codec_.cid_len());
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    send_version_negotiation(vc, from);
    return;
  }
  if (rv != 0) {
    WorkerCounters::add(counters_.malformed);
    return;
  }
  const bool is_long = (data[0] & 0x80) != 0;
  auto it = by_cid_.find(key_of(vc.dcid, vc.dcidlen));
  if (it == by_cid_.end()) {
    if (is_long) {
      accept(data, len, from, ecn, now, nullptr);
    } else {
      not_found(vc.dcid, vc.dcidlen);
    }
    return;
  }
  if (!is_long) WorkerCounters::add(counters_.owned);
  Connection* conn = it->second;
  handle(conn, conn->on_datagram(from, data, len, ecn, now));
}

void Worker::not_found(const std::uint8_t* dcid, std::size_t dcidlen) {
  auto owner = codec_.decode(std::span<const std::uint8_t>(dcid, dcidlen));
  if (owner && *owner != id_) {
    WorkerCounters::add(counters_.misdirected);
  } else {
    WorkerCounters::add(counters_.unknown_cid);
  }
}

void Worker::accept(const std::uint8_t* data, std::size_t len, const sockaddr_storage& from,
                    std::uint32_t ecn, ngtcp2_tstamp now,
                    const AddressValidator::Outcome* forwarded) {
  AcceptInfo info;
  info.local = config_.listen;
  info.remote = from;
  if (ngtcp2_accept(&info.hd, data, len) != 0) {
    // Not an acceptable Initial: a Handshake/0-RTT/short packet of an unknown connection.
    ngtcp2_version_cid vc{};
    if (ngtcp2_pkt_decode_version_cid(&vc, data, len, codec_.cid_len()) == 0) {
      not_found(vc.dcid, vc.dcidlen);
    } else {
      WorkerCounters::add(counters_.malformed);
    }
    return;
  }
  if (conns_.size() >= config_.max_connections) {
    WorkerCounters::add(counters_.rejected_initial);
    return;
  }
  if (!validator_) return;
  // Forwarded by the gate: verified there. Otherwise this worker decides (host Retry, or
  // gate mode with the gate down or the flow allowlisted).
  const AddressValidator::Outcome outcome =
      forwarded ? *forwarded : validator_->on_initial(info.hd, from, wall_clock_ms());
  switch (outcome.action) {
    case AddressValidator::Action::send_retry:
      send_retry(info.hd, from);
      return;
    case AddressValidator::Action::drop:
      return;
    case AddressValidator::Action::accept:
      break;
  }
  if (outcome.has_odcid) {
    info.odcid = &outcome.odcid;
  } else if (!outcome.new_token && !forwarded) {
    info.hd.token = ngtcp2_vec{nullptr, 0};  // not validated by a token: ignore any
  }
  create(info, data, len, from, ecn, now);
}

void Worker::create(AcceptInfo& info, const std::uint8_t* data, std::size_t len,
                    const sockaddr_storage& from, std::uint32_t ecn, ngtcp2_tstamp now) {
  auto conn = Connection::create(*this, info, now);
  if (!conn) {
    WorkerCounters::add(counters_.rejected_initial);
    return;
  }
  Connection* raw = conn.get();
  conns_.emplace(raw, std::move(conn));
  WorkerCounters::add(counters_.accepted);
  WorkerCounters::add(counters_.active);
  associate(raw->scid(), raw);
  associate(info.hd.dcid, raw);  // retransmitted Initials carry the client's DCID
  handle(raw, raw->on_datagram(from, data, len, ecn, now));
}

void Worker::send_retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& to) {
  ngtcp2_cid scid{};
  make_cid(&scid);
  std::array<std::uint8_t, token::kMaxTokenLen> token{};
  const std::size_t tokenlen =
      validator_->make_retry_token(token, to, hd.dcid, scid, wall_clock_ms());
  if (tokenlen == 0) return;
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf{};
  const auto n = ngtcp2_crypto_write_retry(buf.data(), buf.size(), hd.version, &hd.scid, &scid,
                                           &hd.dcid, token.data(),
                                           static_cast<std::size_t>(tokenlen));
  if (n <= 0) return;
  send(buf.data(), static_cast<std::size_t>(n), to);
  TokenCounters::add(token_counters_.retry_sent);
}

void Worker::send_version_negotiation(const ngtcp2_version_cid& vc, const sockaddr_storage& to) {
  WorkerCounters::add(counters_.version_negotiation);
  const std::uint32_t versions[] = {NGTCP2_PROTO_VER_V1, 0x1a2a3a4a};
  std::uint8_t unused = 0;
  gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1);
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf{};
  const auto n = ngtcp2_pkt_write_version_negotiation(buf.data(), buf.size(), unused, vc.scid,
                                                      vc.scidlen, vc.dcid, vc.dcidlen, versions,
                                                      2);
  if (n > 0) send(buf.data(), static_cast<std::size_t>(n), to);
}

void Worker::handle(Connection* conn, Connection::Status status) {
  if (status == Connection::Status::remove) {
    remove(conn);
    return;
  }
  // Every event of a connection passes here: its deadline may have moved.
  timers_.set(conn, quic::from_ngtcp2(conn->next_deadline()));
}

void Worker::remove(Connection* conn) {
  for (const auto& key : conn->cid_keys()) by_cid_.erase(key);
  timers_.erase(conn);
  conns_.erase(conn);
  WorkerCounters::add(counters_.closed);
  counters_.active.fetch_sub(1, std::memory_order_relaxed);
}

ngtcp2_tstamp Worker::next_deadline() const { return quic::to_ngtcp2(timers_.next()); }

void Worker::run_timers(ngtcp2_tstamp now) {
  for (Connection* c : timers_.take_due(quic::from_ngtcp2(now))) {
    handle(c, c->on_expiry(now));
  }
}

void Worker::run(const std::atomic<bool>& stop) {
  std::vector<std::uint8_t> buf(65536);
  while (!stop.load(std::memory_order_relaxed)) {
    ngtcp2_tstamp now = quic::now();
    const ngtcp2_tstamp deadline = std::min(next_deadline(), now + kMaxWait);
    const ngtcp2_tstamp wait = deadline > now ? deadline - now : 0;
    pollfd pfd[2] = {{socket_.fd(), POLLIN, 0}, {gate_fd_, POLLIN, 0}};
    timespec ts{static_cast<time_t>(wait / NGTCP2_SECONDS),
                static_cast<long>(wait % NGTCP2_SECONDS)};
    ppoll(pfd, gate_fd_ >= 0 ? 2 : 1, &ts, nullptr);
    if (gate_fd_ >= 0) drain_gate_socket(buf);
    for (std::size_t i = 0; i < kRecvBatch; ++i) {
      sockaddr_storage from{};
      socklen_t from_len = 0;
      std::uint32_t ecn = 0;
      const long n = socket_.recv(buf.data(), buf.size(), &from, &from_len, &ecn);
      if (n < 0) break;
      on_datagram(buf.data(), static_cast<std::size_t>(n), from, ecn, quic::now());
    }
    run_timers(quic::now());
  }
}

}  // namespace quicstep::server_testbed
