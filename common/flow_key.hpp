// FlowKey: a transport flow seen from its client side (the side that sent the first packet,
// or the QUIC Initial / TCP SYN), so that both directions of a connection find one entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/ip_packet.hpp"

namespace quicstep::common {

struct FlowKey {
  IpAddress client;
  IpAddress server;
  std::uint16_t client_port = 0;
  std::uint16_t server_port = 0;
  std::uint8_t protocol = 0;

  // The key of `packet` as sent by the client (from src to dst).
  static FlowKey from_client(const IpPacket& packet) {
    return {packet.src, packet.dst, packet.src_port, packet.dst_port, packet.protocol};
  }
  // The key of `packet` as sent by the server (the reverse direction).
  static FlowKey from_server(const IpPacket& packet) {
    return {packet.dst, packet.src, packet.dst_port, packet.src_port, packet.protocol};
  }

  friend bool operator==(const FlowKey&, const FlowKey&) = default;
};

struct FlowKeyHash {
  std::size_t operator()(const FlowKey& k) const noexcept {
    // FNV-1a over the meaningful bytes: cheap, and good enough for a table whose keys an
    // observer cannot choose freely. (Attackers choosing ports could aim at collisions; the
    // table is bounded, so the worst case is slow lookups, not growth.)
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint8_t b) { h = (h ^ b) * 1099511628211ull; };
    for (auto b : k.client.octets()) mix(b);
    for (auto b : k.server.octets()) mix(b);
    mix(k.client_port >> 8), mix(k.client_port & 0xff);
    mix(k.server_port >> 8), mix(k.server_port & 0xff);
    mix(k.protocol);
    return static_cast<std::size_t>(h);
  }
};

}  // namespace quicstep::common
