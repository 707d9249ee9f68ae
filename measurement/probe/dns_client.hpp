// DnsClient: A/AAAA lookups over UDP to one recursive resolver, on the caller's event loop
// (one socket; the caller polls fd() and calls on_readable / on_expiry). At most
// max_in_flight queries are outstanding; further ones wait in a FIFO and are sent as others
// finish (a resolver like dnsmasq drops queries beyond a few hundred in flight). Each sent
// query is resent at 1/3 and 2/3 of the timeout and answered with status timeout at the
// timeout; the timeout counts from when it was sent, not queued.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>

#include "common/error.hpp"
#include "measurement/probe/dns_answer.hpp"
#include "net/udp_socket.hpp"

namespace quicstep::measurement::probe {

class DnsClient {
 public:
  using Callback = std::function<void(const DnsAnswer&)>;

  DnsClient(const sockaddr_storage& server, std::uint64_t timeout_ns, std::size_t max_in_flight);
  // Opens the socket (before any resolve). Failures: the socket's.
  common::Outcome open();
  int fd() const { return sock_.fd(); }

  // Sends the query; `done` runs later, from on_readable or on_expiry, exactly once.
  // A name that cannot be encoded is answered at once with servfail.
  void resolve(const std::string& name, std::uint16_t qtype, std::uint64_t now_ns,
               Callback done);
  void on_readable(std::uint64_t now_ns);
  void on_expiry(std::uint64_t now_ns);
  std::uint64_t next_deadline() const;
  std::size_t pending() const { return pending_.size(); }
  std::size_t waiting() const { return waiting_.size(); }

 private:
  struct Query {
    std::string name;
    std::uint16_t qtype = 0;
    std::vector<std::uint8_t> wire;
    std::uint64_t resend_at = 0;  // 0: no resend left
    unsigned resends_left = 0;
    std::uint64_t deadline = 0;
    Callback done;
  };
  struct Waiting {
    std::string name;
    std::uint16_t qtype = 0;
    Callback done;
  };
  std::uint16_t fresh_id();
  void send(const Query& q);
  void start(const std::string& name, std::uint16_t qtype, std::uint64_t now_ns, Callback done);
  void start_waiting(std::uint64_t now_ns);

  net::UdpSocket sock_;
  sockaddr_storage server_{};
  std::uint64_t timeout_ns_;
  std::size_t max_in_flight_;
  std::unordered_map<std::uint16_t, Query> pending_;
  std::deque<Waiting> waiting_;
};

}  // namespace quicstep::measurement::probe
