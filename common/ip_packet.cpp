#include "common/ip_packet.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "common/ipv4.hpp"
#include "common/ipv6.hpp"

namespace quicstep::common {
namespace {

// Fills the L4 fields of `p` from p.ip_payload. Errors: those of parse_udp / parse_tcp.
Status parse_transport(IpPacket& p) {
  p.payload = p.ip_payload;
  if (!p.has_l4_header) return {};
  if (p.protocol == kIpProtoUdp) {
    auto udp =
        parse_udp(p.ip_payload, p.is_fragment ? UdpExtent::first_fragment : UdpExtent::whole);
    if (!udp) return udp.error();
    p.src_port = udp->src_port;
    p.dst_port = udp->dst_port;
    p.payload = udp->payload;
    p.udp = *udp;
  } else if (p.protocol == kIpProtoTcp) {
    auto tcp = parse_tcp(p.ip_payload);
    if (!tcp) return tcp.error();
    p.src_port = tcp->src_port;
    p.dst_port = tcp->dst_port;
    p.payload = tcp->payload;
    p.tcp = *tcp;
  }
  return {};
}

Result<IpPacket> from_ipv4(Bytes packet) {
  auto v4 = parse_ipv4(packet);
  if (!v4) return v4.error();
  IpPacket p;
  p.family = IpFamily::v4;
  p.src = IpAddress::v4(v4->src);
  p.dst = IpAddress::v4(v4->dst);
  p.protocol = v4->protocol;
  p.ttl = v4->ttl;
  p.is_fragment = v4->is_fragment();
  p.has_l4_header = v4->has_l4_header();
  p.ip_payload = v4->payload;
  return p;
}

Result<IpPacket> from_ipv6(Bytes packet) {
  auto v6 = parse_ipv6(packet);
  if (!v6) return v6.error();
  IpPacket p;
  p.family = IpFamily::v6;
  p.src = IpAddress::v6(v6->src);
  p.dst = IpAddress::v6(v6->dst);
  p.protocol = v6->protocol;
  p.ttl = v6->hop_limit;
  // An atomic fragment (offset 0, no more fragments; RFC 6946) holds a whole datagram.
  p.is_fragment = v6->fragment && (v6->fragment->offset != 0 || v6->fragment->more_fragments);
  p.has_l4_header = v6->has_l4_header();
  p.ip_payload = v6->payload;
  return p;
}

}  // namespace

IpAddress IpAddress::v4(const std::array<std::uint8_t, 4>& a) {
  IpAddress ip;
  ip.family = IpFamily::v4;
  std::copy(a.begin(), a.end(), ip.bytes.begin());
  return ip;
}

IpAddress IpAddress::v6(const std::array<std::uint8_t, 16>& a) {
  IpAddress ip;
  ip.family = IpFamily::v6;
  ip.bytes = a;
  return ip;
}

std::string IpAddress::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  const int af = family == IpFamily::v4 ? AF_INET : AF_INET6;
  if (inet_ntop(af, bytes.data(), text, sizeof text) == nullptr) return "?";
  return text;
}

Result<IpPacket> parse_ip_packet(Bytes packet) {
  if (packet.empty()) return Error::truncated;
  const std::uint8_t version = packet[0] >> 4;
  Result<IpPacket> p = version == 4   ? from_ipv4(packet)
                       : version == 6 ? from_ipv6(packet)
                                      : Result<IpPacket>(Error::unsupported);
  if (!p) return p;
  if (auto s = parse_transport(*p); !s) return s.error();
  return p;
}

bool transport_checksum_valid(const IpPacket& p) {
  if (p.is_fragment || !p.has_l4_header) return false;
  if (p.protocol != kIpProtoUdp && p.protocol != kIpProtoTcp) return false;
  if (p.udp && p.family == IpFamily::v4 && p.udp->checksum == 0) return true;
  const Bytes segment = p.udp ? p.ip_payload.first(p.udp->length) : p.ip_payload;
  std::uint32_t pseudo = 0;
  const Bytes src = p.src.octets();
  const Bytes dst = p.dst.octets();
  for (std::size_t i = 0; i + 1 < src.size(); i += 2)
    pseudo += (std::uint32_t{src[i]} << 8) | src[i + 1];
  for (std::size_t i = 0; i + 1 < dst.size(); i += 2)
    pseudo += (std::uint32_t{dst[i]} << 8) | dst[i + 1];
  pseudo += p.protocol;
  pseudo += static_cast<std::uint32_t>(segment.size() >> 16) +
            static_cast<std::uint32_t>(segment.size() & 0xffff);
  return internet_checksum(segment, pseudo) == 0;
}

}  // namespace quicstep::common
