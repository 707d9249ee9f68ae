// The classifier over arbitrary bytes, with flow state carried across inputs. Input: one
// control byte (bits 0-1: direction 0 outbound, 1 inbound_native, 2 inbound_channel; bit 2:
// run the timers; bits 3-7: milliseconds to advance the clock), then the IP packet.
//
// Beyond "no crash", it asserts invariant 1 and what the frontends rely on:
//   - strict policy (other UDP and protocols to the channel): an outbound `native` decision
//     only for an unfragmented UDP datagram to a QUIC port whose first payload byte has the
//     long-header bit clear (judged by the wire library's full parser, independently);
//   - default policy: never native for TCP, DNS, fragments, unparseable packets or QUIC
//     long headers; inbound packets are always accepted; drop never appears;
//   - the fast header path agrees with the full parser whenever it accepts bytes;
//   - the flow table, the watchdog and the event queue stay within their bounds.
#include <array>
#include <cstddef>
#include <cstdint>

#include "client/core/classifier.hpp"

namespace {

using namespace quicstep::client::core;
using quicstep::common::Bytes;
using quicstep::common::Timestamp;

Policy strict_policy() {
  Policy p;
  p.other_udp = Route::channel;
  p.other_protocols = Route::channel;
  p.quic_ports = {443, 8443};
  p.hold.packets = 2;
  p.flows.capacity = 32;
  p.destinations.capacity = 8;
  p.event_capacity = 16;
  return p;
}

Policy default_policy() {
  Policy p;
  p.flows.capacity = 32;
  p.destinations.capacity = 8;
  p.event_capacity = 16;
  return p;
}

const Policy kStrict = strict_policy();
const Policy kPlain = default_policy();
Classifier strict{kStrict};
Classifier plain{kPlain};
std::int64_t now_ns = 0;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void check_fast_path(Bytes packet) {
  PacketFacts fast;
  if (!peek_common_packet(packet, &fast)) return;
  auto full = quicstep::common::parse_ip_packet(packet);
  check(full.ok() && fast == facts_of(*full));
}

void check_decisions(Bytes packet, Direction dir, Decision s, Decision d) {
  check(s.path != Path::drop && d.path != Path::drop);
  if (dir != Direction::outbound && dir != Direction::outbound_copy) {
    check(s.path == Path::native && d.path == Path::native);
    return;
  }
  if (s.path != Path::native && d.path != Path::native) return;
  auto p = quicstep::common::parse_ip_packet(packet);
  check(p.ok());
  const bool udp = p->protocol == quicstep::common::kIpProtoUdp && p->udp && !p->is_fragment;
  const bool short_on_quic = udp && strict.is_quic_port(p->dst_port) && !p->payload.empty() &&
                             (p->payload[0] & 0x80) == 0;
  if (s.path == Path::native) check(short_on_quic);
  if (d.path == Path::native && p->protocol != quicstep::common::kIpProtoUdp) {
    check(p->protocol != quicstep::common::kIpProtoTcp);
  } else if (d.path == Path::native) {
    check(udp && p->src_port != 53 && p->dst_port != 53);
    if (plain.is_quic_port(p->dst_port)) check((p->payload[0] & 0x80) == 0);
  }
}

void check_bounds(Classifier& c, const Policy& p) {
  check(c.flow_count() <= p.flows.capacity);
  check(c.destinations().size() <= p.destinations.capacity);
  check(c.pending_events() <= p.event_capacity);
  std::array<FlowEvent, 8> events;
  while (c.drain_events(events) != 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const Bytes packet(data + 1, size - 1);
  const auto dir = static_cast<Direction>(control & 3);  // outbound_copy is 3
  now_ns += std::int64_t{control >> 3} * 1'000'000;
  const Timestamp now{now_ns};
  check_fast_path(packet);
  const Decision s = strict.classify(packet, dir, now);
  const Decision d = plain.classify(packet, dir, now);
  check_decisions(packet, dir, s, d);
  if (control & 4) {
    strict.on_expiry(now);
    plain.on_expiry(now);
    check(strict.next_expiry() > now && plain.next_expiry() > now);
  }
  check_bounds(strict, kStrict);
  check_bounds(plain, kPlain);
  return 0;
}
