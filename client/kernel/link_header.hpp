// The IP packet inside a copy that nflog delivers from a device's egress. At a netdev
// egress hook the packet still starts at its link-layer header, so a copy made there (the
// routed path copies the channel's outbound QUIC packets at the channel device's egress)
// does too: nothing on a layer-3 device (WireGuard, a TUN), 14 octets on an Ethernet-framed
// one (a veth, a TAP-based tunnel), 4 more per VLAN tag. Copies made on ingress start at
// the IP header. Pure, unit-tested.
#pragma once

#include <optional>
#include <string>

#include "common/byte_reader.hpp"

namespace quicstep::client::kernel {

// The IP packet of an egress copy from a device with (`ethernet`) or without Ethernet
// framing; nullopt when the frame carries no IPv4 or IPv6 packet (ARP, too short).
std::optional<common::Bytes> egress_ip_packet(common::Bytes copy, bool ethernet);

// Whether network device `ifname` is Ethernet-framed (its /sys/class/net/<ifname>/type is
// ARPHRD_ETHER); false when it cannot be read.
bool is_ethernet_device(const std::string& ifname);

}  // namespace quicstep::client::kernel
