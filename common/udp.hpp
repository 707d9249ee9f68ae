// UDP header view (RFC 768): a const, non-owning view over one datagram's bytes.
#pragma once

#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::common {

inline constexpr std::size_t kUdpHeaderLength = 8;

struct UdpView {
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint16_t length = 0;    // header + payload, as on the wire
  std::uint16_t checksum = 0;  // as on the wire (0: none, IPv4 only); not verified here
  Bytes payload;               // bounded by `length`; for a first fragment, only the bytes present
};

// How much of the datagram the bytes are expected to hold.
enum class UdpExtent : std::uint8_t {
  whole,           // the whole datagram: `length` must fit in the bytes
  first_fragment,  // the first IP fragment: the header must be present, the rest may not
};

// Parses the UDP header at the start of `segment` (the IP payload); the view points into
// `segment`. Bytes past `length` are ignored.
// Errors:
//   truncated  - fewer than 8 bytes;
//   bad_length - `length` < 8, or (for UdpExtent::whole) `length` > the bytes present.
Result<UdpView> parse_udp(Bytes segment, UdpExtent extent = UdpExtent::whole);

}  // namespace quicstep::common
