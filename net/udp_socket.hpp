// UdpSocket: an RAII non-blocking UDP socket with SO_REUSEPORT, bound to one address.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "net/socket_endpoint.hpp"

namespace quicstep::net {

class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  using Opened = common::Result<UdpSocket, common::Failure>;
  // socket + SO_REUSEPORT (+ IPV6_V6ONLY) + bind. Failures: "what: strerror" (socket,
  // SO_REUSEPORT, IPV6_V6ONLY, bind).
  static Opened open_reuseport(const sockaddr_storage& addr, socklen_t len);
  // The same without SO_REUSEPORT, for clients binding port 0: with SO_REUSEPORT the kernel
  // may hand two sockets the same ephemeral port, and they then share each other's packets.
  static Opened open_client(const sockaddr_storage& addr, socklen_t len);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // One datagram, or -1 with errno (EAGAIN when none is waiting). ecn gets the TOS/TCLASS
  // ECN bits when the kernel reports them.
  long recv(std::uint8_t* buf, std::size_t len, sockaddr_storage* from, socklen_t* from_len,
            std::uint32_t* ecn) const;
  // true when the kernel took the datagram.
  bool send(const std::uint8_t* data, std::size_t len, const sockaddr_storage& to,
            socklen_t to_len) const;

 private:
  explicit UdpSocket(int fd) : fd_(fd) {}
  static Opened open(const sockaddr_storage& addr, socklen_t len, bool reuseport);
  int fd_ = -1;
};

}  // namespace quicstep::net
