#include "client/core/packet_facts.hpp"

namespace quicstep::client::core {

PacketFacts facts_of(const common::IpPacket& packet) {
  PacketFacts f;
  f.tuple = common::FlowKey::from_client(packet);
  f.is_fragment = packet.is_fragment;
  f.has_ports = packet.udp.has_value() || packet.tcp.has_value();
  f.payload = packet.payload;
  return f;
}

bool read_packet_facts_slow(Bytes packet, PacketFacts* out) {
  auto parsed = common::parse_ip_packet(packet);
  if (!parsed) return false;
  *out = facts_of(*parsed);
  return true;
}

}  // namespace quicstep::client::core
