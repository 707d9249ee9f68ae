#include "net/netlink_socket.hpp"

#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace quicstep::net {

common::Result<mnl_socket*, common::Failure> open_netlink(int bus, const char* what) {
  mnl_socket* s = mnl_socket_open2(bus, SOCK_CLOEXEC);
  if (s == nullptr) return common::Failure(std::string(what) + " socket: " + std::strerror(errno));
  if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
    common::Failure failure(std::string(what) + " bind: " + std::strerror(errno));
    mnl_socket_close(s);
    return failure;
  }
  return s;
}

std::uint64_t drain_netlink(int fd, const std::function<void(const nlmsghdr*)>& on_message) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  std::uint64_t lost = 0;
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        ++lost;
        continue;
      }
      return lost;  // EAGAIN: drained (or the socket failed: nothing more to read)
    }
    int left = static_cast<int>(n);
    for (const auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(h, left);
         h = mnl_nlmsg_next(h, &left)) {
      on_message(h);
    }
  }
}

}  // namespace quicstep::net
