#include "client/tun/io/protector.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "client/tun/io/fd_exchange.hpp"

namespace quicstep::client::tun {

std::string MarkProtector::protect(int fd) {
  if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark_, sizeof mark_) == 0) return {};
  return "setsockopt(SO_MARK, " + describe() + "): " + std::strerror(errno);
}

std::string MarkProtector::describe() const {
  char text[32];
  std::snprintf(text, sizeof text, "fwmark 0x%x", mark_);
  return text;
}

std::string SocketProtector::protect(int fd) {
  const common::Outcome sent = send_fd(path_, fd, timeout_);
  return sent.ok() ? std::string() : sent.error().message;
}

}  // namespace quicstep::client::tun
