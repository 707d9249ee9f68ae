#include "net/namespace_lock.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <thread>

namespace quicstep::net {
namespace {

// The abstract address of `name` (a leading NUL, no terminator) and its length.
socklen_t abstract_address(const std::string& name, sockaddr_un* a) {
  *a = {};
  a->sun_family = AF_UNIX;
  const std::size_t n = std::min(name.size(), sizeof a->sun_path - 1);
  std::memcpy(a->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

pid_t NamespaceLock::holder(const std::string& name) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return 0;
  sockaddr_un a;
  const socklen_t len = abstract_address(name, &a);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) return 0;
  ucred cred{};
  socklen_t cred_len = sizeof cred;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) return 0;
  return cred.pid;
}

common::Result<NamespaceLock, common::Failure> NamespaceLock::acquire(
    const std::string& name, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return common::Failure(std::string("socket: ") + std::strerror(errno));
    sockaddr_un a;
    const socklen_t len = abstract_address(name, &a);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) == 0) {
      if (::listen(fd.get(), 4) != 0) {
        return common::Failure(std::string("listen: ") + std::strerror(errno));
      }
      return NamespaceLock(std::move(fd));
    }
    if (errno != EADDRINUSE) {
      return common::Failure("bind @" + name + ": " + std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= until) {
      const pid_t pid = holder(name);
      return common::Failure(pid > 0 ? "held by pid " + std::to_string(pid)
                                     : std::string("held by another process"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace quicstep::net
