// open_netlink: a libmnl socket on one netlink bus, bound with a kernel-chosen port id — the
// opening every netlink user here shares (rules, sets, socket diagnostics).
#pragma once

#include <string>

struct mnl_socket;

namespace quicstep::client {

// The bound socket, or nullptr with `*why` set ("<what> socket: <errno text>").
mnl_socket* open_netlink(int bus, const char* what, std::string* why);

}  // namespace quicstep::client
