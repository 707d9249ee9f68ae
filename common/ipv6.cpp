#include "common/ipv6.hpp"

#include <algorithm>

namespace quicstep::common {
namespace {

namespace nh = ipv6_next_header;

bool is_extension_header(std::uint8_t type) {
  switch (type) {
    case nh::kHopByHop:
    case nh::kRouting:
    case nh::kFragment:
    case nh::kAuthentication:
    case nh::kDestinationOptions:
    case nh::kMobility:
    case nh::kHip:
    case nh::kShim6:
      return true;
    default:
      return false;
  }
}

// Parses the fixed 40 bytes. Errors: truncated, bad_value (version).
Result<Ipv6View> parse_fixed_header(Bytes packet) {
  ByteReader r(packet);
  auto fixed = r.bytes(kIpv6HeaderLength);
  if (!fixed) {
    if (!packet.empty() && (packet[0] >> 4) != 6) return Error::bad_value;
    return fixed.error();
  }
  // `h` spans exactly the 40 fixed bytes: none of its reads below can fail.
  ByteReader h(*fixed);
  Ipv6View v;
  const std::uint32_t word = h.u32().value_or(0);
  if ((word >> 28) != 6) return Error::bad_value;
  v.traffic_class = static_cast<std::uint8_t>((word >> 20) & 0xff);
  v.flow_label = word & 0xfffff;
  v.payload_length = h.u16().value_or(0);
  v.next_header = h.u8().value_or(0);
  v.hop_limit = h.u8().value_or(0);
  std::copy_n(fixed->begin() + 8, 16, v.src.begin());
  std::copy_n(fixed->begin() + 24, 16, v.dst.begin());
  return v;
}

// Reads one extension header of type `type` from `r` (positioned at its first byte) and
// returns its Next Header. Fills v.fragment for a fragment header. Errors: bad_length when
// the header runs past the payload (the reader is bounded by the payload length);
// bad_value for a second fragment header.
Result<std::uint8_t> read_extension_header(ByteReader& r, std::uint8_t type, Ipv6View& v) {
  const Bytes at = r.rest();
  if (at.size() < 8) return Error::bad_length;  // every extension header is >= 8 bytes
  const std::uint8_t next = at[0];
  std::size_t length = 0;
  if (type == nh::kFragment) {
    // Two fragment headers make the datagram ambiguous (an evasion trick): refuse them.
    if (v.fragment) return Error::bad_value;
    length = 8;                      // fixed size; its second byte is reserved
    ByteReader f(at.subspan(2, 6));  // 6 bytes: the reads below cannot fail
    const std::uint16_t offset_flags = f.u16().value_or(0);
    Ipv6Fragment frag;
    frag.offset = offset_flags >> 3;
    frag.more_fragments = (offset_flags & 1) != 0;
    frag.identification = f.u32().value_or(0);
    v.fragment = frag;
  } else if (type == nh::kAuthentication) {
    length = (std::size_t{at[1]} + 2) * 4;  // RFC 4302: in 4-byte units, minus 2
  } else {
    length = (std::size_t{at[1]} + 1) * 8;  // RFC 8200: in 8-byte units, minus 1
  }
  if (!r.skip(length)) return Error::bad_length;
  return next;
}

}  // namespace

Result<Ipv6View> parse_ipv6(Bytes packet) {
  auto parsed = parse_fixed_header(packet);
  if (!parsed) return parsed.error();
  Ipv6View& v = *parsed;
  if (kIpv6HeaderLength + v.payload_length > packet.size()) return Error::bad_length;
  const Bytes body = packet.subspan(kIpv6HeaderLength, v.payload_length);

  ByteReader r(body);
  std::uint8_t type = v.next_header;
  while (is_extension_header(type)) {
    if (type == nh::kHopByHop && v.extension_count != 0) return Error::bad_value;
    if (v.extension_count == kIpv6MaxExtensionHeaders) return Error::limit_exceeded;
    auto next = read_extension_header(r, type, v);
    if (!next) return next.error();
    ++v.extension_count;
    type = *next;
    // After a non-first fragment's header come the middle bytes of the datagram, not
    // headers: stop walking.
    if (v.fragment && v.fragment->offset != 0) break;
  }
  v.protocol = type;
  v.extensions = body.first(r.position());
  v.payload = r.rest();
  return std::move(*parsed);
}

}  // namespace quicstep::common
