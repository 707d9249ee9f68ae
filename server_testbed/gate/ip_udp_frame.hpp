// The IPv4/IPv6 + UDP header the gate writes itself when it sends its Retries through a raw
// IP socket (quicstep-gate --tx raw): no UDP socket layer per Retry, the way a DPU puts its
// answers on the wire without the host's stack. Sans-IO, written in place, no allocation.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace quicstep::server_testbed::gate {

constexpr std::size_t kIpv4UdpHeader = 20 + 8;
constexpr std::size_t kIpv6UdpHeader = 40 + 8;

// Writes into `out` an IPv4 (no options, DF, TTL 64, header checksum) or IPv6 (hop limit 64)
// header, a UDP header with its checksum (pseudo-header included; 0 sent as 0xffff), then
// `payload`. `from` and `to` are sockaddr_in or sockaddr_in6 of one family (addresses and
// ports used as they are). `ip_id` is the IPv4 identification (ignored for IPv6).
// Returns the packet length, or 0 when the families differ or are not IP, or `out` is too
// small, or the UDP length would exceed 65,535.
std::size_t write_ip_udp(std::span<std::uint8_t> out, const sockaddr_storage& from,
                         const sockaddr_storage& to, std::span<const std::uint8_t> payload,
                         std::uint16_t ip_id);

}  // namespace quicstep::server_testbed::gate
