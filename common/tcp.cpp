#include "common/tcp.hpp"

namespace quicstep::common {

Result<TcpView> parse_tcp(Bytes segment) {
  ByteReader r(segment);
  auto fixed = r.bytes(kTcpMinHeaderLength);
  if (!fixed) {
    if (segment.size() > 12 && (segment[12] >> 4) < 5) return Error::bad_value;
    return fixed.error();
  }
  // `h` spans exactly the 20 fixed bytes: none of its reads below can fail.
  ByteReader h(*fixed);
  TcpView v;
  v.src_port = h.u16().value_or(0);
  v.dst_port = h.u16().value_or(0);
  v.seq = h.u32().value_or(0);
  v.ack = h.u32().value_or(0);
  v.data_offset = h.u8().value_or(0) >> 4;
  if (v.data_offset < 5) return Error::bad_value;
  v.flags = h.u8().value_or(0);
  v.window = h.u16().value_or(0);
  v.checksum = h.u16().value_or(0);
  v.urgent_pointer = h.u16().value_or(0);
  auto options = r.bytes(v.header_length() - kTcpMinHeaderLength);
  if (!options) return options.error();
  v.options = *options;
  v.payload = r.rest();
  return v;
}

}  // namespace quicstep::common
