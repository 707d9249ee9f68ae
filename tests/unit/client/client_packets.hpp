// Packets for the client/ tests: QUIC long and short headers of every kind, wrapped in
// IPv4/IPv6 UDP by PacketBuilder, outbound (this host -> server) and inbound (reverse).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/packet_builder.hpp"

namespace quicstep::client::core::testing {

using quicstep::test::ByteVec;
using quicstep::test::PacketBuilder;

inline constexpr const char* kClient4 = "198.18.0.2";
inline constexpr const char* kServer4 = "198.18.1.10";
inline constexpr const char* kClient6 = "2001:db8::2";
inline constexpr const char* kServer6 = "2001:db8:1::10";

// A long header: first byte, version, 8-byte DCID and SCID, then `body` bytes.
inline ByteVec long_header(std::uint8_t first, std::uint32_t version, std::size_t body = 40) {
  ByteVec p{first, static_cast<std::uint8_t>(version >> 24),
            static_cast<std::uint8_t>(version >> 16), static_cast<std::uint8_t>(version >> 8),
            static_cast<std::uint8_t>(version)};
  p.push_back(8);
  for (int i = 0; i < 8; ++i) p.push_back(static_cast<std::uint8_t>(0xa0 + i));
  p.push_back(8);
  for (int i = 0; i < 8; ++i) p.push_back(static_cast<std::uint8_t>(0xb0 + i));
  for (std::size_t i = 0; i < body; ++i) p.push_back(static_cast<std::uint8_t>(i * 7));
  return p;
}

// v1 type bits: Initial 0x00, 0-RTT 0x10, Handshake 0x20, Retry 0x30 (RFC 9000 §17.2).
inline ByteVec initial_v1() { return long_header(0xc1, 0x00000001, 1200); }
inline ByteVec zero_rtt_v1() { return long_header(0xd1, 0x00000001); }
inline ByteVec handshake_v1() { return long_header(0xe1, 0x00000001); }
inline ByteVec retry_v1() { return long_header(0xf0, 0x00000001); }
// v2 remaps the types (RFC 9369 §3.2): Initial 0x10, 0-RTT 0x20, Handshake 0x30, Retry 0x00.
inline ByteVec initial_v2() { return long_header(0xd1, 0x6b3343cf, 1200); }
inline ByteVec handshake_v2() { return long_header(0xf1, 0x6b3343cf); }
inline ByteVec version_negotiation() { return long_header(0x80 | 0x2a, 0x00000000, 8); }
inline ByteVec greased_long() { return long_header(0x81, 0x00000001, 1200); }  // fixed bit 0
inline ByteVec unknown_version_long() { return long_header(0xc5, 0x1a2a3a4a, 100); }

// A 1-RTT short header: first byte (fixed bit set by default), then `size - 1` bytes.
inline ByteVec short_header(std::size_t size = 60, std::uint8_t first = 0x41) {
  ByteVec p(size, 0x5c);
  p[0] = first;
  return p;
}

inline ByteVec udp4(std::uint16_t sport, std::uint16_t dport, const ByteVec& payload,
                    const char* src = kClient4, const char* dst = kServer4) {
  return PacketBuilder().ipv4(src, dst).udp(sport, dport).payload(payload).build();
}
inline ByteVec udp6(std::uint16_t sport, std::uint16_t dport, const ByteVec& payload,
                    const char* src = kClient6, const char* dst = kServer6) {
  return PacketBuilder().ipv6(src, dst).udp(sport, dport).payload(payload).build();
}

// Outbound QUIC to server:443 from client port `cport`, and its inbound reply.
inline ByteVec out4(std::uint16_t cport, const ByteVec& quic, const char* server = kServer4,
                    std::uint16_t sport = 443) {
  return udp4(cport, sport, quic, kClient4, server);
}
inline ByteVec in4(std::uint16_t cport, const ByteVec& quic, const char* server = kServer4,
                   std::uint16_t sport = 443) {
  return udp4(sport, cport, quic, server, kClient4);
}
inline ByteVec out6(std::uint16_t cport, const ByteVec& quic, const char* server = kServer6) {
  return udp6(cport, 443, quic, kClient6, server);
}
inline ByteVec in6(std::uint16_t cport, const ByteVec& quic, const char* server = kServer6) {
  return udp6(443, cport, quic, server, kClient6);
}

}  // namespace quicstep::client::core::testing
