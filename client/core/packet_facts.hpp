// PacketFacts: the few fields of an IP packet the classifier decides on, and the two ways
// to read them. The fast path reads the common shapes (IPv4 unfragmented, IPv6 without
// extension headers, carrying UDP or TCP) straight from the bytes, with every bound
// checked; every other shape — options aside, fragments, extension chains, other protocols,
// anything malformed — goes through common::parse_ip_packet, the wire library's full parser.
//
// What must hold (tested differentially, and fuzzed in tests/fuzz/fuzz_classifier.cpp):
// when peek_common_packet() returns true, parse_ip_packet() succeeds on the same bytes and
// facts_of() its result equals what the fast path wrote. The fast path only ever declines.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/byte_reader.hpp"
#include "common/flow_key.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::client::core {

using common::Bytes;

struct PacketFacts {
  // The packet's addresses, ports and upper-layer protocol (IPv6: after the extension
  // chain) in its own direction: client = source, server = destination. Ports are 0 unless
  // has_ports. A FlowKey, so that an outbound packet's flow key costs no copy.
  common::FlowKey tuple;
  bool is_fragment = false;  // part of a fragmented datagram, first fragment included
  bool has_ports = false;    // a UDP or TCP header was parsed
  Bytes payload;  // the UDP or TCP payload when has_ports; else the IP payload

  std::uint8_t protocol() const { return tuple.protocol; }
  std::uint16_t src_port() const { return tuple.client_port; }
  std::uint16_t dst_port() const { return tuple.server_port; }

  friend bool operator==(const PacketFacts& a, const PacketFacts& b) {
    return a.tuple == b.tuple && a.is_fragment == b.is_fragment &&
           a.has_ports == b.has_ports && a.payload.data() == b.payload.data() &&
           a.payload.size() == b.payload.size();
  }
};

// The facts of a packet the full parser accepted.
PacketFacts facts_of(const common::IpPacket& packet);

namespace detail {
inline std::uint16_t be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}

// UDP (whole datagram) or TCP at the start of `seg`; false when parse_udp / parse_tcp
// would fail, or for another protocol.
inline bool peek_transport(Bytes seg, std::uint8_t protocol, PacketFacts* out) {
  if (protocol == common::kIpProtoUdp) {
    if (seg.size() < 8) return false;
    const std::size_t length = be16(seg.data() + 4);
    if (length < 8 || length > seg.size()) return false;
    out->payload = seg.subspan(8, length - 8);
  } else if (protocol == common::kIpProtoTcp) {
    if (seg.size() < 20) return false;
    const std::size_t header = static_cast<std::size_t>(seg[12] >> 4) * 4;
    if (header < 20 || header > seg.size()) return false;
    out->payload = seg.subspan(header);
  } else {
    return false;
  }
  out->tuple.protocol = protocol;
  out->tuple.client_port = be16(seg.data());
  out->tuple.server_port = be16(seg.data() + 2);
  out->has_ports = true;
  out->is_fragment = false;
  return true;
}
}  // namespace detail

// The fast path. Returns false, leaving *out unspecified, for any packet outside the common
// shapes above; the caller then uses read_packet_facts' full parse. Never fails otherwise.
inline bool peek_common_packet(Bytes packet, PacketFacts* out) {
  if (packet.size() < 20) return false;
  const std::uint8_t* p = packet.data();
  if ((p[0] >> 4) == 4) {
    const std::size_t header = std::size_t{p[0] & 0x0fu} * 4;
    const std::size_t total = detail::be16(p + 2);
    if (header < 20 || total < header || total > packet.size()) return false;
    if ((detail::be16(p + 6) & 0x3fff) != 0) return false;  // MF or an offset: a fragment
    common::IpAddress& src = out->tuple.client;
    common::IpAddress& dst = out->tuple.server;
    src.family = dst.family = common::IpFamily::v4;
    src.bytes = {};
    dst.bytes = {};
    std::memcpy(src.bytes.data(), p + 12, 4);
    std::memcpy(dst.bytes.data(), p + 16, 4);
    return detail::peek_transport(packet.subspan(header, total - header), p[9], out);
  }
  if ((p[0] >> 4) == 6 && packet.size() >= 40) {
    const std::size_t length = detail::be16(p + 4);
    if (length > packet.size() - 40) return false;
    out->tuple.client.family = out->tuple.server.family = common::IpFamily::v6;
    std::memcpy(out->tuple.client.bytes.data(), p + 8, 16);
    std::memcpy(out->tuple.server.bytes.data(), p + 24, 16);
    return detail::peek_transport(packet.subspan(40, length), p[6], out);
  }
  return false;
}

// The full parser's path of read_packet_facts.
bool read_packet_facts_slow(Bytes packet, PacketFacts* out);

// The facts of `packet`: the fast path, else the full parser. Returns false when the packet
// is not a well-formed IPv4/IPv6 packet (parse_ip_packet's errors).
inline bool read_packet_facts(Bytes packet, PacketFacts* out) {
  return peek_common_packet(packet, out) || read_packet_facts_slow(packet, out);
}

}  // namespace quicstep::client::core
