// Protector: how a frontend keeps one of the engine's own sockets out of the TUN (docs/
// DESIGN.md "Processes and the protocols between them"), before the socket sends anything.
//   MarkProtector  Linux: SO_MARK with the mark whose policy rule leads to the main table
//                  (as Android's netd does, and as wg-quick marks its own socket); needs
//                  CAP_NET_ADMIN.
//   SocketProtector Android: the socket goes to the service's protect socket (fd_exchange.hpp,
//                  shadowsocks-android's protect_path protocol), which calls
//                  VpnService.protect(fd) and answers; one exchange per socket.
//   NoProtector    tests whose sockets need no protection (no TUN routes in their way).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace quicstep::client::tun {

class Protector {
 public:
  virtual ~Protector() = default;
  // Protects the socket `fd`. Returns an empty string, or what failed in words.
  virtual std::string protect(int fd) = 0;
  // For the status: "fwmark 0x...", "none".
  virtual std::string describe() const = 0;
};

class MarkProtector : public Protector {
 public:
  explicit MarkProtector(std::uint32_t mark) : mark_(mark) {}
  std::string protect(int fd) override;
  std::string describe() const override;

 private:
  std::uint32_t mark_;
};

class SocketProtector : public Protector {
 public:
  // The service answers at once: a silent one for `timeout` is dead or wedged.
  explicit SocketProtector(std::string path,
                           std::chrono::milliseconds timeout = std::chrono::seconds(5))
      : path_(std::move(path)), timeout_(timeout) {}
  std::string protect(int fd) override;
  std::string describe() const override { return "protect socket " + path_; }

 private:
  std::string path_;
  std::chrono::milliseconds timeout_;
};

class NoProtector : public Protector {
 public:
  std::string protect(int) override { return {}; }
  std::string describe() const override { return "none"; }
};

}  // namespace quicstep::client::tun
