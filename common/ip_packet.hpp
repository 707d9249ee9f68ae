// parse_ip_packet: the first call of the pcap inspector, the censor and the router's
// classifier. Dispatches on the version nibble to IPv4 or IPv6, then parses UDP or TCP when
// the packet carries one's header (not in a non-first fragment). No allocation: the result
// is a small value whose spans point into the packet.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "common/byte_reader.hpp"
#include "common/error.hpp"
#include "common/tcp.hpp"
#include "common/udp.hpp"

namespace quicstep::common {

inline constexpr std::uint8_t kIpProtoTcp = 6;
inline constexpr std::uint8_t kIpProtoUdp = 17;

enum class IpFamily : std::uint8_t { v4 = 4, v6 = 6 };

// An IPv4 or IPv6 address; an IPv4 address fills the first 4 bytes, the rest are zero.
struct IpAddress {
  IpFamily family = IpFamily::v4;
  std::array<std::uint8_t, 16> bytes{};

  static IpAddress v4(const std::array<std::uint8_t, 4>& a);
  static IpAddress v6(const std::array<std::uint8_t, 16>& a);
  // The 4 or 16 meaningful bytes.
  Bytes octets() const { return Bytes(bytes).first(family == IpFamily::v4 ? 4 : 16); }
  // "198.18.0.1", "2001:db8::1" (inet_ntop's forms). Allocates: not for the packet path.
  std::string to_string() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

struct IpPacket {
  IpFamily family = IpFamily::v4;
  IpAddress src;
  IpAddress dst;
  std::uint8_t protocol = 0;   // upper-layer protocol (IPv6: after the extension chain)
  std::uint8_t ttl = 0;        // IPv4 TTL or IPv6 hop limit
  bool is_fragment = false;    // part of a fragmented datagram (first fragment included)
  bool has_l4_header = true;   // false for a non-first fragment
  std::uint16_t src_port = 0;  // 0 unless udp or tcp is set
  std::uint16_t dst_port = 0;
  std::optional<UdpView> udp;  // set for UDP with its header present
  std::optional<TcpView> tcp;  // set for TCP with its header present
  Bytes ip_payload;            // the bytes after the IP header(s): the whole L4 segment
  // The L4 payload: UDP or TCP data; for other protocols and non-first fragments, the same
  // bytes as ip_payload. For a first fragment, only the bytes of this fragment.
  Bytes payload;
};

// Parses an IPv4 or IPv6 packet, and its UDP or TCP header when present.
// Errors:
//   truncated      - empty input; or from parse_ipv4 / parse_ipv6 / parse_udp / parse_tcp;
//   unsupported    - the version nibble is neither 4 nor 6;
//   bad_value, bad_length, limit_exceeded - from the IP, UDP or TCP parser (see their
//                    headers): a malformed L4 header fails the whole packet.
Result<IpPacket> parse_ip_packet(Bytes packet);

// Whether the UDP or TCP checksum of an unfragmented packet is right (pseudo-header
// included; an IPv4 UDP checksum of 0 means "none" and counts as right). False for
// fragments and other protocols. The pseudo-header uses the packet's own destination: with
// an IPv6 routing header, where the sender used the final one, the result can be wrong.
bool transport_checksum_valid(const IpPacket& packet);

}  // namespace quicstep::common
