// The TUN engine's core over arbitrary bytes, with its state carried across inputs. Input:
// one control byte (bits 0-2: 0-2 from the TUN, 3 from the channel, 4-5 from a relay whose
// id is the next byte, 6 a network change, 7 the timers; bits 3-7: milliseconds to advance
// the clock), then the packet or datagram.
//
// Beyond "no crash", it asserts what the engine promises (client/tun/engine_core.hpp):
//   - invariant 1, with other UDP and protocols set to the channel: every payload sent on
//     a relay is a QUIC short header (first bit clear, not empty) and the relay's flow goes
//     to a QUIC port over UDP;
//   - everything written into the TUN from a relay is a well-formed IP/UDP packet from that
//     relay's server to its application;
//   - nothing empty goes to the WireGuard helper; relays and held packets stay within bounds;
//   - DNS to and from the channel's resolvers is rewritten in place (channel_dns.hpp) without
//     reading or writing out of bounds (ASan).
#include <cstddef>
#include <cstdint>

#include "client/tun/engine_core.hpp"
#include "common/ip_packet.hpp"

namespace {

using namespace quicstep::client;
using quicstep::common::Bytes;
using quicstep::common::Timestamp;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

tun::EngineConfig config() {
  tun::EngineConfig c;
  c.policy.other_udp = core::Route::channel;
  c.policy.other_protocols = core::Route::channel;
  c.policy.quic_ports = {443, 8443};
  c.policy.flows.capacity = 32;
  c.policy.destinations.capacity = 8;
  c.policy.event_capacity = 16;
  c.relay_capacity = 8;
  c.relay_idle = std::chrono::seconds(2);
  c.held_capacity = 4;
  c.held_max_payload = 1500;
  // DNS into and out of the channel is rewritten (channel_dns.hpp) for these resolvers.
  c.channel_dns_v4 = quicstep::common::IpAddress::v4({198, 18, 0, 53});
  c.channel_dns_v6 = quicstep::common::IpAddress::v6(
      {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53});
  // A query from another source leaves from these, and its answer goes back.
  c.tunnel_v4 = quicstep::common::IpAddress::v4({198, 19, 255, 2});
  c.tunnel_v6 = quicstep::common::IpAddress::v6(
      {0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});
  return c;
}

class CheckingIo : public tun::EngineIo {
 public:
  const tun::EngineCore* engine = nullptr;
  bool refuse = false;
  bool open_relay(tun::RelayId, const quicstep::common::FlowKey& flow) override {
    check(flow.protocol == quicstep::common::kIpProtoUdp);
    check(engine->classifier().is_quic_port(flow.server_port));
    return !refuse;
  }
  void close_relay(tun::RelayId) override {}
  void send_native(tun::RelayId id, Bytes payload) override {
    check(engine->relays().live(id));
    check(!payload.empty() && (payload[0] & 0x80) == 0);
  }
  void send_channel(Bytes packet) override { check(!packet.empty()); }
  void write_tun(Bytes packet) override {
    check(!packet.empty());
    if (relay == tun::kNoRelay) return;
    auto p = quicstep::common::parse_ip_packet(packet);
    check(p.ok() && p->udp.has_value() && !p->is_fragment);
    check(quicstep::common::FlowKey::from_server(*p) == engine->relays().flow(relay));
  }
  tun::RelayId relay = tun::kNoRelay;  // the relay whose datagram is being delivered
};

const tun::EngineConfig kConfig = config();
CheckingIo io;
tun::EngineCore engine{kConfig, io};
std::int64_t now_ns = 0;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  io.engine = &engine;
  if (size < 1) return 0;
  now_ns += std::int64_t{data[0] >> 3} * 1'000'000;
  const Timestamp now{now_ns};
  Bytes rest(data + 1, size - 1);
  switch (data[0] & 7) {
    case 3:
      engine.from_channel(rest, now);
      break;
    case 4:
    case 5: {
      if (rest.empty()) break;
      const tun::RelayId id = rest[0] % 10;  // live ids and some that are not
      io.relay = engine.relays().live(id) ? id : tun::kNoRelay;
      engine.from_relay(id, rest.subspan(1), now);
      io.relay = tun::kNoRelay;
      break;
    }
    case 6:
      io.refuse = !rest.empty() && (rest[0] & 1);
      engine.network_changed(now);
      io.refuse = false;
      break;
    case 7:
      engine.on_expiry(now);
      break;
    default:
      engine.from_tun(rest, now);
  }
  check(engine.relays().size() <= kConfig.relay_capacity);
  check(engine.held().size() <= kConfig.held_capacity);
  return 0;
}
