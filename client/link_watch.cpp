#include "client/link_watch.hpp"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "client/netlink_socket.hpp"

namespace quicstep::client {

LinkWatch::~LinkWatch() {
  if (socket_ != nullptr) mnl_socket_close(socket_);
}

std::string LinkWatch::open() {
  if (socket_ != nullptr) return {};
  std::string why;
  socket_ = open_netlink(NETLINK_ROUTE, "rtnetlink (links)", &why);
  if (socket_ == nullptr) return why;
  int group = RTNLGRP_LINK;
  if (mnl_socket_setsockopt(socket_, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0) {
    return std::string("rtnetlink: subscribe to link changes: ") + std::strerror(errno);
  }
  const int flags = fcntl(fd(), F_GETFL);
  if (flags < 0 || fcntl(fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return std::string("rtnetlink: O_NONBLOCK: ") + std::strerror(errno);
  }
  return {};
}

int LinkWatch::fd() const { return socket_ == nullptr ? -1 : mnl_socket_get_fd(socket_); }

bool LinkWatch::drain() {
  if (socket_ == nullptr) return false;
  bool changed = false;
  const std::uint64_t lost = drain_netlink(fd(), [&](const nlmsghdr* h) {
    if (h->nlmsg_type == RTM_NEWLINK) changed = true;
  });
  return changed || lost != 0;  // lost announcements: maybe a new link
}

}  // namespace quicstep::client
