#include "client/kernel/udp_socket_watch.hpp"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/netlink_socket.hpp"

namespace quicstep::client::kernel {
namespace {

bool unspecified(const common::IpAddress& a) {
  const std::size_t n = a.family == common::IpFamily::v4 ? 4 : 16;
  return std::all_of(a.bytes.begin(), a.bytes.begin() + n, [](std::uint8_t b) { return b == 0; });
}

// An address of inet_diag_sockid, v4-mapped IPv6 folded to IPv4 (a dual-stack socket's
// IPv4 peer is compared with flows keyed by IPv4 addresses).
common::IpAddress diag_address(std::uint8_t family, const __be32* words) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(words);
  if (family == AF_INET) return common::IpAddress::v4({b[0], b[1], b[2], b[3]});
  std::array<std::uint8_t, 16> a{};
  std::memcpy(a.data(), b, 16);
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a.data(), kMapped, 12) == 0) return common::IpAddress::v4({b[12], b[13], b[14], b[15]});
  return common::IpAddress::v6(a);
}

std::optional<UdpSocketId> parse(const nlmsghdr* h) {
  if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return std::nullopt;
  if (mnl_nlmsg_get_payload_len(h) < sizeof(inet_diag_msg)) return std::nullopt;
  const auto* m = static_cast<const inet_diag_msg*>(mnl_nlmsg_get_payload(h));
  if (m->idiag_family != AF_INET && m->idiag_family != AF_INET6) return std::nullopt;
  UdpSocketId s;
  s.local = diag_address(m->idiag_family, m->id.idiag_src);
  s.remote = diag_address(m->idiag_family, m->id.idiag_dst);
  s.local_port = ntohs(m->id.idiag_sport);
  s.remote_port = ntohs(m->id.idiag_dport);
  return s;
}

}  // namespace

bool socket_may_carry(const UdpSocketId& s, const common::FlowKey& flow) {
  if (s.local_port != flow.client_port) return false;
  if (s.remote_port != 0 && s.remote_port != flow.server_port) return false;
  return unspecified(s.remote) || s.remote == flow.server;
}

UdpSocketWatch::~UdpSocketWatch() {
  if (events_ != nullptr) mnl_socket_close(events_);
  if (lookup_ != nullptr) mnl_socket_close(lookup_);
}

common::Outcome UdpSocketWatch::open() {
  if (events_ == nullptr) {
    auto opened = net::open_netlink(NETLINK_SOCK_DIAG, "sock_diag");
    if (!opened) return opened.error();
    events_ = *opened;
    for (int group : {SKNLGRP_INET_UDP_DESTROY, SKNLGRP_INET6_UDP_DESTROY}) {
      if (mnl_socket_setsockopt(events_, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0) {
        return common::Failure(std::string("sock_diag: subscribe to UDP socket destruction: ") +
                               std::strerror(errno));
      }
    }
    int rcvbuf = 1 << 20;
    if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0) {
      setsockopt(fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    const int flags = fcntl(fd(), F_GETFL);
    if (flags < 0 || fcntl(fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
      return common::Failure(std::string("sock_diag: O_NONBLOCK: ") + std::strerror(errno));
    }
  }
  return open_lookup();
}

common::Outcome UdpSocketWatch::open_lookup() {
  if (lookup_ == nullptr) {
    auto opened = net::open_netlink(NETLINK_SOCK_DIAG, "sock_diag");
    if (!opened) return opened.error();
    lookup_ = *opened;
  }
  return {};
}

int UdpSocketWatch::fd() const { return events_ == nullptr ? -1 : mnl_socket_get_fd(events_); }

bool UdpSocketWatch::drain(const std::function<void(const UdpSocketId&)>& on_closed) {
  if (events_ == nullptr) return true;
  const std::uint64_t lost = net::drain_netlink(fd(), [&](const nlmsghdr* h) {
    if (auto s = parse(h)) {
      ++seen_;
      on_closed(*s);
    }
  });
  overflows_ += lost;
  return lost == 0;
}

std::optional<bool> UdpSocketWatch::may_carry(const common::FlowKey& flow) {
  if (lookup_ == nullptr) return std::nullopt;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
  nlh->nlmsg_flags = NLM_F_REQUEST;
  const std::uint32_t seq = seq_++;
  nlh->nlmsg_seq = seq;
  auto* req = static_cast<inet_diag_req_v2*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req_v2)));
  const bool v4 = flow.client.family == common::IpFamily::v4;
  req->sdiag_family = v4 ? AF_INET : AF_INET6;
  req->sdiag_protocol = IPPROTO_UDP;
  req->idiag_states = ~0U;
  // The kernel looks up the receiving socket of a datagram from idiag_src:idiag_sport to
  // idiag_dst:idiag_dport ("src and dst are swapped for historical reasons", udp_diag.c):
  // the server is the source, this host the destination.
  const std::size_t n = v4 ? 4 : 16;
  std::memcpy(req->id.idiag_src, flow.server.bytes.data(), n);
  std::memcpy(req->id.idiag_dst, flow.client.bytes.data(), n);
  req->id.idiag_sport = htons(flow.server_port);
  req->id.idiag_dport = htons(flow.client_port);
  req->id.idiag_cookie[0] = req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (mnl_socket_sendto(lookup_, nlh, nlh->nlmsg_len) < 0) return std::nullopt;
  for (;;) {
    pollfd p{mnl_socket_get_fd(lookup_), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return std::nullopt;
    const ssize_t got = mnl_socket_recvfrom(lookup_, buf.data(), buf.size());
    if (got < 0) return std::nullopt;
    int left = static_cast<int>(got);
    for (const auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(h, left);
         h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_seq != seq) continue;  // a late answer to an earlier request
      if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY) return true;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
        if (e->error == -ENOENT) return false;
        return std::nullopt;
      }
    }
  }
}

std::optional<std::vector<UdpSocketId>> UdpSocketWatch::sockets_on_port(std::uint16_t port) {
  if (lookup_ == nullptr) return std::nullopt;
  std::vector<UdpSocketId> out;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (std::uint8_t family : {std::uint8_t{AF_INET}, std::uint8_t{AF_INET6}}) {
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    const std::uint32_t seq = seq_++;
    nlh->nlmsg_seq = seq;
    auto* req = static_cast<inet_diag_req_v2*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req_v2)));
    req->sdiag_family = family;
    req->sdiag_protocol = IPPROTO_UDP;
    req->idiag_states = ~0U;
    if (mnl_socket_sendto(lookup_, nlh, nlh->nlmsg_len) < 0) return std::nullopt;
    // The dump: every UDP socket of the family (a desktop has some hundreds), filtered here.
    for (bool done = false; !done;) {
      pollfd p{mnl_socket_get_fd(lookup_), POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) return std::nullopt;
      const ssize_t n = mnl_socket_recvfrom(lookup_, buf.data(), buf.size());
      if (n < 0) return std::nullopt;
      int left = static_cast<int>(n);
      for (const auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(h, left);
           h = mnl_nlmsg_next(h, &left)) {
        if (h->nlmsg_seq != seq) continue;
        if (h->nlmsg_type == NLMSG_DONE) {
          done = true;
          break;
        }
        if (h->nlmsg_type == NLMSG_ERROR) return std::nullopt;
        if (auto s = parse(h); s && s->local_port == port) out.push_back(*s);
      }
    }
  }
  return out;
}

}  // namespace quicstep::client::kernel
