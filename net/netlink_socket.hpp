// open_netlink: a libmnl socket on one netlink bus, bound with a kernel-chosen port id — the
// opening every netlink user here shares (rules, sets, socket diagnostics). drain_netlink:
// the reading of a subscription's announcements (link changes, closed sockets).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/error.hpp"

struct mnl_socket;
struct nlmsghdr;

namespace quicstep::net {

// The bound socket (the caller closes it: mnl_socket_close), or why not ("<what> socket:
// <errno text>", "<what> bind: <errno text>").
common::Result<mnl_socket*, common::Failure> open_netlink(int bus, const char* what);

// Reads every message waiting on the non-blocking netlink socket `fd` (until EAGAIN) and
// calls `on_message` for each. Returns how many times the kernel reported announcements lost
// to a full receive buffer (ENOBUFS); reading goes on after each.
std::uint64_t drain_netlink(int fd, const std::function<void(const nlmsghdr*)>& on_message);

}  // namespace quicstep::net
