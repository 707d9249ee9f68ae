// Link-layer framing of captured packets: finds the IP datagram inside a frame of one of
// the link types that tcpdump writes on Linux (Ethernet with VLAN tags, Linux cooked
// captures v1 and v2, raw IP, BSD loopback).
#pragma once

#include <cstdint>

#include "common/byte_reader.hpp"

namespace quicstep::common {

// pcap DLT_* values (as libpcap's pcap_datalink() returns them).
enum class LinkType : std::uint32_t {
  null_loopback = 0,  // DLT_NULL: 4-byte host-order address family
  ethernet = 1,       // DLT_EN10MB
  raw = 12,           // DLT_RAW (LINKTYPE_RAW 101 is mapped to this by libpcap)
  raw_alt = 101,      // LINKTYPE_RAW as it appears in some files
  linux_sll = 113,    // DLT_LINUX_SLL
  ipv4 = 228,         // DLT_IPV4
  ipv6 = 229,         // DLT_IPV6
  linux_sll2 = 276,   // DLT_LINUX_SLL2
};

// Returns the IP datagram inside `frame`.
// Errors: truncated (frame shorter than its link header, or nothing after it), unsupported (unknown link type,
// or an EtherType/protocol that is not IPv4 or IPv6 — ARP, LLDP, ...).
Result<Bytes> ip_datagram_of_frame(LinkType link_type, Bytes frame);

}  // namespace quicstep::common
