#include "server_testbed/worker.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <vector>

namespace quicstep::server_testbed {

namespace {

constexpr std::size_t kRecvBatch = 64;                         // datagrams per wake-up
constexpr ngtcp2_tstamp kMaxWait = 100 * NGTCP2_MILLISECONDS;  // stop-flag latency
constexpr ngtcp2_duration kRetryTokenLifetime = 10 * NGTCP2_SECONDS;

std::string key_of(const std::uint8_t* data, std::size_t len) {
  return std::string(reinterpret_cast<const char*>(data), len);
}

ngtcp2_tstamp system_now() {
  return static_cast<ngtcp2_tstamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

ngtcp2_tstamp monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<ngtcp2_tstamp>(ts.tv_sec) * NGTCP2_SECONDS +
         static_cast<ngtcp2_tstamp>(ts.tv_nsec);
}

Worker::Worker(std::uint32_t id, const ServerConfig& config, const CidCodec& codec,
               const TlsContext& tls, const StaticSecret& secret, UdpSocket socket)
    : id_(id), config_(config), codec_(codec), tls_(tls), secret_(secret),
      socket_(std::move(socket)) {}

Worker::~Worker() {
  by_cid_.clear();
  conns_.clear();
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
  if (socket_.send(data, len, to, sockaddr_len(to))) {
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
      accept(data, len, from, ecn, now);
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
                    std::uint32_t ecn, ngtcp2_tstamp now) {
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
  ngtcp2_cid odcid{};
  if (config_.retry) {
    if (info.hd.token.len == 0 || info.hd.token.base[0] != NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
      send_retry(info.hd, from);
      return;
    }
    if (ngtcp2_crypto_verify_retry_token(&odcid, info.hd.token.base, info.hd.token.len,
                                         secret_.data(), secret_.size(), info.hd.version,
                                         reinterpret_cast<const sockaddr*>(&from),
                                         sockaddr_len(from), &info.hd.dcid,
                                         kRetryTokenLifetime, system_now()) != 0) {
      WorkerCounters::add(counters_.retry_token_bad);
      return;
    }
    info.odcid = &odcid;
  } else {
    info.hd.token = ngtcp2_vec{nullptr, 0};  // regular tokens are not issued: ignore any
  }
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
  std::array<std::uint8_t, NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN> token{};
  const auto tokenlen = ngtcp2_crypto_generate_retry_token(
      token.data(), secret_.data(), secret_.size(), hd.version,
      reinterpret_cast<const sockaddr*>(&to), sockaddr_len(to), &scid, &hd.dcid, system_now());
  if (tokenlen < 0) return;
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf{};
  const auto n = ngtcp2_crypto_write_retry(buf.data(), buf.size(), hd.version, &hd.scid, &scid,
                                           &hd.dcid, token.data(),
                                           static_cast<std::size_t>(tokenlen));
  if (n <= 0) return;
  send(buf.data(), static_cast<std::size_t>(n), to);
  WorkerCounters::add(counters_.retry_sent);
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
  if (status == Connection::Status::remove) remove(conn);
}

void Worker::remove(Connection* conn) {
  for (const auto& key : conn->cid_keys()) by_cid_.erase(key);
  conns_.erase(conn);
  WorkerCounters::add(counters_.closed);
  counters_.active.fetch_sub(1, std::memory_order_relaxed);
}

ngtcp2_tstamp Worker::next_deadline() const {
  ngtcp2_tstamp next = UINT64_MAX;
  for (const auto& [raw, conn] : conns_) next = std::min(next, conn->next_deadline());
  return next;
}

void Worker::run_timers(ngtcp2_tstamp now) {
  std::vector<Connection*> due;
  for (const auto& [raw, conn] : conns_) {
    if (conn->next_deadline() <= now) due.push_back(raw);
  }
  for (Connection* c : due) handle(c, c->on_expiry(now));
}

void Worker::run(const std::atomic<bool>& stop) {
  std::vector<std::uint8_t> buf(65536);
  while (!stop.load(std::memory_order_relaxed)) {
    ngtcp2_tstamp now = monotonic_now();
    const ngtcp2_tstamp deadline = std::min(next_deadline(), now + kMaxWait);
    const ngtcp2_tstamp wait = deadline > now ? deadline - now : 0;
    pollfd pfd{socket_.fd(), POLLIN, 0};
    timespec ts{static_cast<time_t>(wait / NGTCP2_SECONDS),
                static_cast<long>(wait % NGTCP2_SECONDS)};
    ppoll(&pfd, 1, &ts, nullptr);
    for (std::size_t i = 0; i < kRecvBatch; ++i) {
      sockaddr_storage from{};
      socklen_t from_len = 0;
      std::uint32_t ecn = 0;
      const long n = socket_.recv(buf.data(), buf.size(), &from, &from_len, &ecn);
      if (n < 0) break;
      on_datagram(buf.data(), static_cast<std::size_t>(n), from, ecn, monotonic_now());
    }
    run_timers(monotonic_now());
  }
}

}  // namespace quicstep::server_testbed
