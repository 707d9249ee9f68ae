#include "lab/censor/packet_forge.hpp"

#include "common/byte_writer.hpp"
#include "common/ipv4.hpp"

namespace quicstep::censor {
namespace {

using common::ByteWriter;
using common::IpAddress;
using common::IpFamily;

// Ones'-complement partial sum of the pseudo-header (RFC 768, RFC 8200 §8.1), unfolded.
std::uint32_t pseudo_header_sum(const IpAddress& src, const IpAddress& dst, std::uint8_t protocol,
                                std::size_t length) {
  std::uint32_t sum = 0;
  const auto add = [&sum](common::Bytes b) {
    for (std::size_t i = 0; i + 1 < b.size(); i += 2) sum += static_cast<std::uint32_t>(b[i] << 8 | b[i + 1]);
  };
  add(src.octets());
  add(dst.octets());
  sum += protocol;
  sum += static_cast<std::uint32_t>(length >> 16) + static_cast<std::uint32_t>(length & 0xffff);
  return sum;
}

}  // namespace

Packet build_ip_packet(const IpAddress& src, const IpAddress& dst, std::uint8_t protocol,
                       std::vector<std::uint8_t> l4) {
  const std::size_t checksum_at = protocol == common::kIpProtoTcp ? 16 : 6;
  std::uint16_t c = common::internet_checksum(l4, pseudo_header_sum(src, dst, protocol, l4.size()));
  if (protocol == common::kIpProtoUdp && c == 0) c = 0xffff;  // 0 means "no checksum"
  l4[checksum_at] = static_cast<std::uint8_t>(c >> 8);
  l4[checksum_at + 1] = static_cast<std::uint8_t>(c);

  ByteWriter w;
  if (src.family == IpFamily::v4) {
    w.u8(0x45).u8(0).u16(static_cast<std::uint16_t>(20 + l4.size()));
    w.u16(0).u16(0x4000);  // id 0, don't fragment
    w.u8(kInjectTtl).u8(protocol).u16(0);
    w.bytes(src.octets()).bytes(dst.octets());
    const std::uint16_t hc = common::internet_checksum(common::Bytes(w.buffer()).first(20));
    w.buffer()[10] = static_cast<std::uint8_t>(hc >> 8);
    w.buffer()[11] = static_cast<std::uint8_t>(hc);
  } else {
    w.u32(0x60000000u).u16(static_cast<std::uint16_t>(l4.size())).u8(protocol).u8(kInjectTtl);
    w.bytes(src.octets()).bytes(dst.octets());
  }
  w.bytes(l4);
  return w.take();
}

Packet build_tcp_rst(const IpAddress& src, const IpAddress& dst, std::uint16_t src_port,
                     std::uint16_t dst_port, std::uint32_t seq, std::uint32_t ack) {
  ByteWriter w;
  w.u16(src_port).u16(dst_port).u32(seq).u32(ack);
  w.u8(5 << 4).u8(0x14);  // data offset 5; RST|ACK
  w.u16(0).u16(0).u16(0);  // window 0, checksum (filled later), urgent pointer
  return build_ip_packet(src, dst, common::kIpProtoTcp, w.take());
}

Packet build_udp(const IpAddress& src, const IpAddress& dst, std::uint16_t src_port,
                 std::uint16_t dst_port, common::Bytes payload) {
  ByteWriter w;
  w.u16(src_port).u16(dst_port).u16(static_cast<std::uint16_t>(8 + payload.size())).u16(0);
  w.bytes(payload);
  return build_ip_packet(src, dst, common::kIpProtoUdp, w.take());
}

}  // namespace quicstep::censor
