#include "client/netlink_socket.hpp"

#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace quicstep::client {

mnl_socket* open_netlink(int bus, const char* what, std::string* why) {
  mnl_socket* s = mnl_socket_open2(bus, SOCK_CLOEXEC);
  if (s == nullptr) {
    *why = std::string(what) + " socket: " + std::strerror(errno);
    return nullptr;
  }
  if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
    *why = std::string(what) + " bind: " + std::strerror(errno);
    mnl_socket_close(s);
    return nullptr;
  }
  return s;
}

}  // namespace quicstep::client
