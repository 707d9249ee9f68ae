#include "common/udp.hpp"

#include <algorithm>

namespace quicstep::common {

Result<UdpView> parse_udp(Bytes segment, UdpExtent extent) {
  ByteReader r(segment);
  auto header = r.bytes(kUdpHeaderLength);
  if (!header) return header.error();
  // `h` spans exactly the 8 header bytes: none of its reads below can fail.
  ByteReader h(*header);
  UdpView v;
  v.src_port = h.u16().value_or(0);
  v.dst_port = h.u16().value_or(0);
  v.length = h.u16().value_or(0);
  v.checksum = h.u16().value_or(0);
  if (v.length < kUdpHeaderLength) return Error::bad_length;
  if (v.length > segment.size() && extent == UdpExtent::whole) return Error::bad_length;
  const std::size_t end = std::min<std::size_t>(v.length, segment.size());
  v.payload = segment.subspan(kUdpHeaderLength, end - kUdpHeaderLength);
  return v;
}

}  // namespace quicstep::common
