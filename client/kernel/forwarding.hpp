// Whether this host forwards packets (a router, a laptop sharing its connection): IPv4's
// net.ipv4.ip_forward or IPv6's net.ipv6.conf.all.forwarding is on, in the network namespace
// of the caller. A forwarding host's channel packets are kept in a conntrack zone of their
// own (nft_rules.hpp, RulesetSpec::forwarded_zone), so that the host's source NAT meets a
// LAN host's flows once they move native.
#pragma once

#include <string>

namespace quicstep::client::kernel {

// `sys_root`: /proc/sys/net (a test's directory of ipv4/ip_forward and
// ipv6/conf/all/forwarding). A file that cannot be read counts as off.
bool host_forwards(const std::string& sys_root = "/proc/sys/net");

}  // namespace quicstep::client::kernel
