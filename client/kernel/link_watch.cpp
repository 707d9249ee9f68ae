#include "client/kernel/link_watch.hpp"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "net/netlink_socket.hpp"

namespace quicstep::client::kernel {

bool link_is_up(const std::string& name) {
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name.c_str());
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool up = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) != 0;
  ::close(fd);
  return up;
}

LinkWatch::~LinkWatch() {
  if (socket_ != nullptr) mnl_socket_close(socket_);
}

common::Outcome LinkWatch::open() {
  if (socket_ != nullptr) return {};
  auto opened = net::open_netlink(NETLINK_ROUTE, "rtnetlink (links)");
  if (!opened) return opened.error();
  socket_ = *opened;
  int group = RTNLGRP_LINK;
  if (mnl_socket_setsockopt(socket_, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0) {
    return common::Failure(std::string("rtnetlink: subscribe to link changes: ") +
                           std::strerror(errno));
  }
  const int flags = fcntl(fd(), F_GETFL);
  if (flags < 0 || fcntl(fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return common::Failure(std::string("rtnetlink: O_NONBLOCK: ") + std::strerror(errno));
  }
  return {};
}

int LinkWatch::fd() const { return socket_ == nullptr ? -1 : mnl_socket_get_fd(socket_); }

bool LinkWatch::drain() {
  if (socket_ == nullptr) return false;
  bool changed = false;
  const std::uint64_t lost = net::drain_netlink(fd(), [&](const nlmsghdr* h) {
    if (h->nlmsg_type == RTM_NEWLINK) changed = true;
  });
  return changed || lost != 0;  // lost announcements: maybe a new link
}

}  // namespace quicstep::client::kernel
