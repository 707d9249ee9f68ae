// IPv4 header view (RFC 791): a const, non-owning view over one packet's bytes. The parser
// checks values, not only lengths: version 4, IHL >= 5, a total length that covers the
// header and fits in the data. Bytes after the total length (Ethernet padding) are ignored.
#pragma once

#include <array>
#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::common {

inline constexpr std::size_t kIpv4MinHeaderLength = 20;

struct Ipv4View {
  std::array<std::uint8_t, 4> src{};
  std::array<std::uint8_t, 4> dst{};
  std::uint8_t ihl = 0;            // header length in 32-bit words, 5..15
  std::uint8_t tos = 0;            // DSCP (6 bits) and ECN (2 bits)
  std::uint16_t total_length = 0;  // header + payload, in bytes
  std::uint16_t identification = 0;
  bool dont_fragment = false;
  bool more_fragments = false;
  std::uint16_t fragment_offset = 0;  // in units of 8 bytes, as on the wire (13 bits)
  std::uint8_t ttl = 0;
  std::uint8_t protocol = 0;          // IANA protocol number: 6 TCP, 17 UDP, ...
  std::uint16_t header_checksum = 0;  // as on the wire; not verified by the parser
  Bytes header;                       // the whole header, options included (ihl * 4 bytes)
  Bytes options;                      // the options, possibly empty; not interpreted
  Bytes payload;                      // the L4 bytes, bounded by total_length

  std::size_t header_length() const { return std::size_t{ihl} * 4; }
  std::size_t fragment_offset_bytes() const { return std::size_t{fragment_offset} * 8; }
  bool is_fragment() const { return more_fragments || fragment_offset != 0; }
  // False for a non-first fragment: its payload starts mid-datagram, with no L4 header.
  bool has_l4_header() const { return fragment_offset == 0; }
};

// Parses the IPv4 header at the start of `packet`; the view points into `packet`.
// Errors:
//   truncated   - fewer than 20 bytes, or fewer than the IHL says;
//   bad_value   - the version nibble is not 4, or IHL < 5;
//   bad_length  - total length < header length, or total length > the bytes present.
Result<Ipv4View> parse_ipv4(Bytes packet);

// RFC 1071 ones'-complement sum of `data` folded into 16 bits, plus `initial` (a partial
// sum, e.g. a pseudo-header's), returned complemented: 0 when `data` carries a correct
// checksum. Never fails.
std::uint16_t internet_checksum(Bytes data, std::uint32_t initial = 0);

}  // namespace quicstep::common
