// IPv6 header view (RFC 8200): the fixed header, then a walk of the extension-header chain
// to the upper-layer protocol. A const, non-owning view over one packet's bytes.
//
// What must hold: the payload length covers the chain and fits in the data (trailing bytes
// are ignored); hop-by-hop options come only first; the chain has at most
// kIpv6MaxExtensionHeaders headers. A non-first fragment (fragment offset != 0) ends the
// walk at its fragment header: the bytes after it are the middle of the original datagram,
// so `protocol` names what the datagram carries but `payload` has no L4 header there.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::common {

inline constexpr std::size_t kIpv6HeaderLength = 40;
// More than any real packet carries; bounds the work spent on a hostile chain.
inline constexpr std::size_t kIpv6MaxExtensionHeaders = 8;

// IPv6 next-header values this parser walks or names.
namespace ipv6_next_header {
inline constexpr std::uint8_t kHopByHop = 0;
inline constexpr std::uint8_t kRouting = 43;
inline constexpr std::uint8_t kFragment = 44;
inline constexpr std::uint8_t kEsp = 50;  // encrypted: the walk stops here
inline constexpr std::uint8_t kAuthentication = 51;
inline constexpr std::uint8_t kNoNextHeader = 59;
inline constexpr std::uint8_t kDestinationOptions = 60;
inline constexpr std::uint8_t kMobility = 135;
inline constexpr std::uint8_t kHip = 139;
inline constexpr std::uint8_t kShim6 = 140;
}  // namespace ipv6_next_header

struct Ipv6Fragment {
  std::uint16_t offset = 0;  // in units of 8 bytes, as on the wire (13 bits)
  bool more_fragments = false;
  std::uint32_t identification = 0;

  std::size_t offset_bytes() const { return std::size_t{offset} * 8; }
};

struct Ipv6View {
  std::array<std::uint8_t, 16> src{};
  std::array<std::uint8_t, 16> dst{};
  std::uint8_t traffic_class = 0;
  std::uint32_t flow_label = 0;      // 20 bits
  std::uint16_t payload_length = 0;  // bytes after the fixed header, chain included
  std::uint8_t next_header = 0;      // the fixed header's Next Header field
  std::uint8_t hop_limit = 0;
  // The upper-layer protocol at the end of the chain (6 TCP, 17 UDP, 58 ICMPv6, 50 ESP,
  // 59 no next header); for a non-first fragment, the protocol the fragment header names.
  std::uint8_t protocol = 0;
  std::uint8_t extension_count = 0;      // extension headers walked, fragment header included
  Bytes extensions;                      // the chain's bytes, from the end of the fixed header
  Bytes payload;                         // the bytes after the chain, bounded by payload_length
  std::optional<Ipv6Fragment> fragment;  // present when the chain has a fragment header

  bool is_fragment() const { return fragment.has_value(); }
  // False for a non-first fragment: its payload starts mid-datagram, with no L4 header.
  bool has_l4_header() const { return !fragment || fragment->offset == 0; }
};

// Parses the IPv6 header and its extension chain at the start of `packet`; the view points
// into `packet`.
// Errors:
//   truncated      - fewer than 40 bytes;
//   bad_value      - the version nibble is not 6, a hop-by-hop header is not first, or
//                    the chain has two fragment headers;
//   bad_length     - payload length > the bytes present, or an extension header runs past
//                    the payload length;
//   limit_exceeded - more than kIpv6MaxExtensionHeaders extension headers.
// Jumbograms (payload length 0 with a Jumbo Payload option) are not supported: they parse
// as a packet whose payload length is 0, and so fail with bad_length if a chain follows.
Result<Ipv6View> parse_ipv6(Bytes packet);

}  // namespace quicstep::common
