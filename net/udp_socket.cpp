#include "net/udp_socket.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace quicstep::net {

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

UdpSocket::UdpSocket(UdpSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UdpSocket::Opened UdpSocket::open_reuseport(const sockaddr_storage& addr, socklen_t len) {
  return open(addr, len, true);
}

UdpSocket::Opened UdpSocket::open_client(const sockaddr_storage& addr, socklen_t len) {
  return open(addr, len, false);
}

UdpSocket::Opened UdpSocket::open(const sockaddr_storage& addr, socklen_t len, bool reuseport) {
  auto fail = [](const char* what, int fd) -> Opened {
    common::Failure failure(std::string(what) + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return failure;
  };
  const int fd = ::socket(addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket", -1);
  const int one = 1;
  if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEPORT", fd);
  }
  if (addr.ss_family == AF_INET6) {
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
      return fail("IPV6_V6ONLY", fd);
    }
    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
  } else {
    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
  }
  // 16 MB buffers: 10,000 connections migrating at once overflowed 4 MB ones (the cap of
  // net.core.rmem_max here). The *FORCE options pass the cap with CAP_NET_ADMIN; without it,
  // the ordinary options (capped by rmem_max/wmem_max).
  const int buf = 16 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
  }
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) return fail("bind", fd);
  return UdpSocket(fd);
}

long UdpSocket::recv(std::uint8_t* buf, std::size_t len, sockaddr_storage* from,
                     socklen_t* from_len, std::uint32_t* ecn) const {
  iovec iov{buf, len};
  alignas(cmsghdr) std::uint8_t control[64];
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = sizeof(*from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const long n = ::recvmsg(fd_, &msg, 0);
  if (n < 0) return n;
  *from_len = msg.msg_namelen;
  *ecn = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len) ||
        (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS && c->cmsg_len)) {
      std::uint8_t tos = 0;
      std::memcpy(&tos, CMSG_DATA(c), 1);
      *ecn = tos & 0x3;
    }
  }
  return n;
}

bool UdpSocket::send(const std::uint8_t* data, std::size_t len, const sockaddr_storage& to,
                     socklen_t to_len) const {
  const long n = ::sendto(fd_, data, len, 0, reinterpret_cast<const sockaddr*>(&to), to_len);
  return n == static_cast<long>(len);
}

}  // namespace quicstep::net
