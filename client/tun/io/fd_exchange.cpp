#include "client/tun/io/fd_exchange.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace quicstep::client::tun {
namespace {

constexpr std::uint8_t kCarrier = 0;
constexpr std::uint8_t kOk = 0;
constexpr std::uint8_t kRefused = 1;
// More than one is refused; room for a few so that a wrong sender's extras are closed, not
// left in the kernel (MSG_CTRUNC would drop and leak nothing either, but counts them lost).
constexpr std::size_t kMaxFdsRead = 8;

common::Result<sockaddr_un, common::Failure> unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return common::Failure("unix socket path '" + path + "' is not 1-" +
                           std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

std::string reason(const std::string& what) { return what + ": " + std::strerror(errno); }

void set_timeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

// Waits until `fd` is readable: 1, 0 on timeout, -1 on error (errno set).
int wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int n = poll(&p, 1, timeout_ms);
    if (n >= 0 || errno != EINTR) return n;
  }
}

void answer(int fd, std::uint8_t value) {
  (void)!send(fd, &value, 1, MSG_NOSIGNAL);
}

// One sender on the accepted connection `conn`: its descriptor when it sent exactly one.
net::UniqueFd take_one(int conn, std::chrono::milliseconds per_sender) {
  if (wait_readable(conn, static_cast<int>(per_sender.count())) != 1) return {};
  std::uint8_t byte = 0xff;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsRead)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  std::vector<net::UniqueFd> fds;
  if (n > 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.emplace_back(fd);
      }
    }
  }
  const bool exactly_one = n == 1 && fds.size() == 1 && (msg.msg_flags & MSG_CTRUNC) == 0;
  answer(conn, exactly_one ? kOk : kRefused);
  return exactly_one ? std::move(fds.front()) : net::UniqueFd();
}

}  // namespace

common::Result<net::UniqueFd, common::Failure> listen_unix(const std::string& path) {
  auto addr = unix_address(path);
  if (!addr.ok()) return addr.error();
  net::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return common::Failure(reason("socket(AF_UNIX)"));
  unlink(path.c_str());
  const mode_t old = umask(0077);
  const bool bound = bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) == 0;
  umask(old);
  if (!bound) return common::Failure(reason("bind " + path));
  if (listen(fd.get(), 16) != 0) return common::Failure(reason("listen " + path));
  return fd;
}

common::Outcome send_fd(const std::string& path, int fd, std::chrono::milliseconds timeout) {
  auto addr = unix_address(path);
  if (!addr.ok()) return addr.error();
  net::UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return common::Failure(reason("socket(AF_UNIX)"));
  set_timeouts(s.get(), timeout);
  int rc;
  do {
    rc = connect(s.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return common::Failure(reason("connect " + path));

  std::uint8_t byte = kCarrier;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  do {
    n = sendmsg(s.get(), &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return common::Failure(reason("sending the descriptor to " + path));

  std::uint8_t reply = 0xff;
  do {
    n = recv(s.get(), &reply, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return common::Failure(path + ": no answer within " + std::to_string(timeout.count()) + " ms");
  }
  if (n < 0) return common::Failure(reason("reading the answer of " + path));
  if (n == 0) return common::Failure(path + " closed the connection without an answer");
  if (reply != kOk) {
    return common::Failure(path + " refused the descriptor (answer " + std::to_string(reply) + ")");
  }
  return {};
}

common::Result<net::UniqueFd, common::Failure> receive_fd(
    int listener, std::chrono::milliseconds per_sender, const std::function<bool()>& keep_waiting) {
  for (;;) {
    if (!keep_waiting()) return common::Failure("stopped");
    const int ready = wait_readable(listener, 200);
    if (ready < 0) return common::Failure(reason("poll"));
    if (ready == 0) continue;
    net::UniqueFd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      return common::Failure(reason("accept"));
    }
    if (net::UniqueFd fd = take_one(conn.get(), per_sender); fd.valid()) return fd;
  }
}

}  // namespace quicstep::client::tun
