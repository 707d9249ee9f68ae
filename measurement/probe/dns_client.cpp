#include "measurement/probe/dns_client.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <algorithm>
#include <array>
#include <vector>

#include "net/socket_endpoint.hpp"

namespace quicstep::measurement::probe {

using net::wildcard;

namespace {
constexpr unsigned kResends = 2;
}  // namespace

DnsClient::DnsClient(const sockaddr_storage& server, std::uint64_t timeout_ns,
                     std::size_t max_in_flight)
    : server_(server),
      timeout_ns_(timeout_ns),
      max_in_flight_(std::max<std::size_t>(1, max_in_flight)) {}

common::Outcome DnsClient::open() {
  const sockaddr_storage any = net::wildcard(server_.ss_family);
  auto opened = net::UdpSocket::open_client(any, net::sockaddr_len(any));
  if (!opened) return opened.error();
  sock_ = std::move(*opened);
  return {};
}

std::uint16_t DnsClient::fresh_id() {
  for (;;) {
    std::uint16_t id = 0;
    gnutls_rnd(GNUTLS_RND_NONCE, &id, sizeof(id));
    if (!pending_.contains(id)) return id;
  }
}

void DnsClient::send(const Query& q) {
  sock_.send(q.wire.data(), q.wire.size(), server_, net::sockaddr_len(server_));
}

void DnsClient::resolve(const std::string& name, std::uint16_t qtype, std::uint64_t now_ns,
                        Callback done) {
  if (pending_.size() >= max_in_flight_ || !waiting_.empty()) {
    waiting_.push_back(Waiting{name, qtype, std::move(done)});
    return;
  }
  start(name, qtype, now_ns, std::move(done));
}

void DnsClient::start_waiting(std::uint64_t now_ns) {
  while (!waiting_.empty() && pending_.size() < max_in_flight_) {
    Waiting w = std::move(waiting_.front());
    waiting_.pop_front();
    start(w.name, w.qtype, now_ns, std::move(w.done));
  }
}

void DnsClient::start(const std::string& name, std::uint16_t qtype, std::uint64_t now_ns,
                      Callback done) {
  const std::uint16_t id = fresh_id();
  auto wire = build_address_query(id, name, qtype);
  if (!wire) {
    DnsAnswer answer;
    answer.status = DnsStatus::servfail;
    done(answer);
    return;
  }
  Query q{name,    qtype, std::move(*wire), now_ns + timeout_ns_ / (kResends + 1), kResends,
          now_ns + timeout_ns_, std::move(done)};
  send(q);
  pending_.emplace(id, std::move(q));
}

void DnsClient::on_readable(std::uint64_t now_ns) {
  std::array<std::uint8_t, 4096> buf;
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    std::uint32_t ecn = 0;
    const long n = sock_.recv(buf.data(), buf.size(), &from, &from_len, &ecn);
    if (n < 0) break;
    if (n < 2) continue;
    const std::uint16_t id = static_cast<std::uint16_t>((buf[0] << 8) | buf[1]);
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    auto answer = parse_address_answer({buf.data(), static_cast<std::size_t>(n)}, id,
                                       it->second.name, it->second.qtype);
    if (!answer) continue;  // stray or malformed: keep waiting for the real one
    Callback done = std::move(it->second.done);
    pending_.erase(it);
    done(*answer);
  }
  start_waiting(now_ns);
}

void DnsClient::on_expiry(std::uint64_t now_ns) {
  std::vector<std::uint16_t> expired;
  for (auto& [id, q] : pending_) {
    if (now_ns >= q.deadline) {
      expired.push_back(id);
    } else if (q.resend_at != 0 && now_ns >= q.resend_at) {
      --q.resends_left;
      q.resend_at = q.resends_left == 0 ? 0 : q.resend_at + timeout_ns_ / (kResends + 1);
      send(q);
    }
  }
  for (std::uint16_t id : expired) {
    Callback done = std::move(pending_.at(id).done);
    pending_.erase(id);
    DnsAnswer answer;
    answer.status = DnsStatus::timeout;
    done(answer);
  }
  start_waiting(now_ns);
}

std::uint64_t DnsClient::next_deadline() const {
  std::uint64_t next = UINT64_MAX;
  for (const auto& [id, q] : pending_) {
    next = std::min(next, q.resend_at != 0 ? q.resend_at : q.deadline);
  }
  return next;
}

}  // namespace quicstep::measurement::probe
