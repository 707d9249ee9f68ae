// ReplyPacket: the IP/UDP packet the TUN engine writes into the TUN for a datagram that a
// native relay received (docs/DESIGN.md "The TUN engine"). A relay's socket is the flow's
// own; what the server sends there must reach the application as if it had come back the
// way the application sent it: from the server's address and port to the application's
// original address and port, whatever address the relay's socket has.
//
// What must hold: the result is a well-formed IPv4 (header checksum, DF, TTL 64) or IPv6
// (hop limit 64) packet carrying one UDP datagram with a correct checksum (RFC 768, RFC
// 8200 §8.1; never 0 on the wire, 0xffff instead), so the kernel behind the TUN accepts it
// and common::parse_ip_packet reads it back to the same addresses, ports and payload. With
// ReplyChecksum::partial the UDP checksum field holds instead the folded pseudo-header sum
// that a CHECKSUM_PARTIAL packet carries (what the kernel completes, or trusts on local
// delivery): only for a TUN write behind a virtio header that says so (udp_gso_batch.hpp),
// and it saves a pass over every payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/byte_reader.hpp"
#include "common/flow_key.hpp"

namespace quicstep::client::tun {

inline constexpr std::size_t kIpv4UdpHeaders = 20 + 8;
inline constexpr std::size_t kIpv6UdpHeaders = 40 + 8;
// The largest reply: an IPv4 total length (or IPv6 payload length) is 16 bits.
inline constexpr std::size_t kMaxReplyPacket = 65535 + 40;

enum class ReplyChecksum : std::uint8_t { complete, partial };

// Writes into `out` the packet that carries `payload` from flow.server:server_port to
// flow.client:client_port (`flow` in outbound orientation, as the classifier keys it).
// Returns the packet's length, or 0 when it does not fit in `out` or in an IP length field
// (the caller drops the datagram and counts it). Never allocates.
std::size_t write_reply_packet(const common::FlowKey& flow, common::Bytes payload,
                               std::span<std::uint8_t> out,
                               ReplyChecksum checksum = ReplyChecksum::complete);

}  // namespace quicstep::client::tun
