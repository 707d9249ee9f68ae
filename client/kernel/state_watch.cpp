#include "client/kernel/state_watch.hpp"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "net/netlink_socket.hpp"

namespace quicstep::client::kernel {
namespace {

common::Outcome subscribe(mnl_socket* s, const char* what, std::initializer_list<int> groups) {
  for (int group : groups) {
    if (mnl_socket_setsockopt(s, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0) {
      return common::Failure(std::string(what) + ": subscribe to group " +
                             std::to_string(group) + ": " + std::strerror(errno));
    }
  }
  const int fd = mnl_socket_get_fd(s);
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return common::Failure(std::string(what) + ": O_NONBLOCK: " + std::strerror(errno));
  }
  return {};
}

}  // namespace

StateWatch::~StateWatch() {
  if (route_ != nullptr) mnl_socket_close(route_);
  if (nft_ != nullptr) mnl_socket_close(nft_);
}

common::Outcome StateWatch::open() {
  if (route_ == nullptr) {
    auto opened = net::open_netlink(NETLINK_ROUTE, "rtnetlink (state watch)");
    if (!opened) return opened.error();
    route_ = *opened;
    if (auto s = subscribe(route_, "rtnetlink", {RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE,
                                                 RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,
                                                 RTNLGRP_LINK, RTNLGRP_TC,
                                                 RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR});
        !s) {
      return s;
    }
  }
  if (nft_ == nullptr) {
    auto opened = net::open_netlink(NETLINK_NETFILTER, "nfnetlink (state watch)");
    if (!opened) return opened.error();
    nft_ = *opened;
    if (auto s = subscribe(nft_, "nfnetlink", {NFNLGRP_NFTABLES}); !s) return s;
  }
  return {};
}

int StateWatch::route_fd() const { return route_ == nullptr ? -1 : mnl_socket_get_fd(route_); }
int StateWatch::nft_fd() const { return nft_ == nullptr ? -1 : mnl_socket_get_fd(nft_); }

bool StateWatch::drain_route() {
  if (route_ == nullptr) return false;
  bool relevant = false;
  const std::uint64_t lost = net::drain_netlink(route_fd(), [&](const nlmsghdr* h) {
    switch (h->nlmsg_type) {
      case RTM_DELRULE:   // a rule gone (ours, or a flush)
      case RTM_DELROUTE:  // a channel route gone
      case RTM_NEWLINK:   // a device down or up (the channel), or a new one
      case RTM_DELLINK:
      case RTM_DELTFILTER:  // a guard's clsact filter removed
      case RTM_DELQDISC:
      case RTM_NEWADDR:  // the native source address may have changed (follow_network)
      case RTM_DELADDR:
        relevant = true;
        break;
      case RTM_NEWROUTE: {  // a new default route: a new uplink, gateway or source
        const auto* rtm = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(h));
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(rtmsg)) && rtm->rtm_dst_len == 0) {
          relevant = true;
        }
        break;
      }
      default:
        break;
    }
  });
  return relevant || lost != 0;
}

bool StateWatch::drain_nft() {
  if (nft_ == nullptr) return false;
  bool relevant = false;
  const std::uint64_t lost = net::drain_netlink(nft_fd(), [&](const nlmsghdr* h) {
    if ((h->nlmsg_type >> 8) != NFNL_SUBSYS_NFTABLES) return;
    switch (h->nlmsg_type & 0xff) {
      case NFT_MSG_DELTABLE:
      case NFT_MSG_DELCHAIN:
      case NFT_MSG_DELRULE:
      case NFT_MSG_DELSET:
        relevant = true;
        break;
      default:
        break;
    }
  });
  return relevant || lost != 0;
}

}  // namespace quicstep::client::kernel
