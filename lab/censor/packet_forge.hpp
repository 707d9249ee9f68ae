// What the censor injects: whole IP packets (IPv4 or IPv6) carrying a TCP RST or a UDP
// datagram, with correct IP and transport checksums, ready for a raw socket (IP_HDRINCL).
// Encoders of trusted input (addresses from a parsed packet): they never fail.
#pragma once

#include <cstdint>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::censor {

using Packet = std::vector<std::uint8_t>;

// Hop limit / TTL of injected packets.
inline constexpr std::uint8_t kInjectTtl = 64;

// An IP packet around `l4` (a UDP or TCP segment whose checksum field is zero): fills the
// transport checksum (pseudo-header included) and, for IPv4, the header checksum.
// Preconditions: src and dst have the same family; l4.size() <= 65515.
Packet build_ip_packet(const common::IpAddress& src, const common::IpAddress& dst,
                       std::uint8_t protocol, std::vector<std::uint8_t> l4);

// A TCP segment with RST and ACK set and no payload.
Packet build_tcp_rst(const common::IpAddress& src, const common::IpAddress& dst,
                     std::uint16_t src_port, std::uint16_t dst_port, std::uint32_t seq,
                     std::uint32_t ack);

// A UDP datagram. Precondition: payload.size() <= 65507.
Packet build_udp(const common::IpAddress& src, const common::IpAddress& dst,
                 std::uint16_t src_port, std::uint16_t dst_port, common::Bytes payload);

}  // namespace quicstep::censor
