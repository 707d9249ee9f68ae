// UdpSocket: an RAII non-blocking UDP socket with SO_REUSEPORT, bound to one address.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace quicstep::server_testbed {

class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // socket + SO_REUSEPORT (+ IPV6_V6ONLY) + bind. On failure returns an invalid socket and
  // sets *error to "what: strerror".
  static UdpSocket open_reuseport(const sockaddr_storage& addr, socklen_t len, std::string* error);
  // The same without SO_REUSEPORT, for clients binding port 0: with SO_REUSEPORT the kernel
  // may hand two sockets the same ephemeral port, and they then share each other's packets.
  static UdpSocket open_client(const sockaddr_storage& addr, socklen_t len, std::string* error);

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
  static UdpSocket open(const sockaddr_storage& addr, socklen_t len, bool reuseport,
                        std::string* error);
  int fd_ = -1;
};

socklen_t sockaddr_len(const sockaddr_storage& addr);
std::string to_string(const sockaddr_storage& addr);

}  // namespace quicstep::server_testbed
