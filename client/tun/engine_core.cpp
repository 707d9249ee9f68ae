#include "client/tun/engine_core.hpp"

#include <algorithm>

#include "client/core/packet_facts.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::client::tun {

using core::Direction;
using core::FlowEvent;
using core::Path;

EngineCore::EngineCore(const EngineConfig& config, EngineIo& io, std::uint64_t seed)
    : io_(io),
      classifier_(std::make_unique<core::Classifier>(config.policy, seed)),
      relays_(std::max<std::size_t>(config.relay_capacity, 1),
              config.relay_idle > Duration::zero() ? config.relay_idle : Duration(1), seed),
      held_(config.held_capacity, config.held_max_payload),
      reply_(std::make_unique<std::array<std::uint8_t, kMaxReplyPacket>>()),
      dns_(config.channel_dns_v4, config.channel_dns_v6, 4096, seed,
           TunnelAddresses{config.tunnel_v4, config.tunnel_v6}),
      dns_packet_(std::make_unique<std::array<std::uint8_t, kMaxReplyPacket>>()) {}

void EngineCore::from_tun(common::Bytes ip_packet, Timestamp now) {
  // Whatever is due leaves before this packet: a flow's held packets before its later ones.
  release_held(now);
  ++counters_.from_tun.packets;
  counters_.from_tun.bytes += ip_packet.size();
  const core::Decision d = classifier_->classify(ip_packet, Direction::outbound, now);
  if (d.reason == core::Reason::not_ip) ++counters_.malformed;
  switch (d.path) {
    case Path::channel:
      to_channel(ip_packet);
      break;
    case Path::native:
      native(ip_packet, d, now);
      break;
    case Path::drop:
      ++counters_.dropped;
      break;
  }
  drain_events();
}

void EngineCore::native(common::Bytes ip_packet, const core::Decision& d, Timestamp now) {
  core::PacketFacts facts;
  // The classifier said native, so the packet parsed; only UDP can be relayed.
  if (!core::read_packet_facts(ip_packet, &facts) || facts.protocol() != common::kIpProtoUdp ||
      facts.is_fragment || !facts.has_ports) {
    ++counters_.native_not_udp;
    to_channel(ip_packet);
    return;
  }
  RelayId id = relays_.find(facts.tuple);
  if (id == kNoRelay) {
    id = open_relay(facts.tuple, now);
    if (id == kNoRelay) {
      to_channel(ip_packet);
      return;
    }
  }
  if (d.not_before > now || held_.holds(id)) {
    if (held_.hold(id, facts.payload, std::max(d.not_before, now))) {
      ++counters_.held;
      relays_.used(id, now);
      return;
    }
    // Sending now could reach the server before the client's Finished (or overtake this
    // flow's held packets) and be dropped there: the channel is the safe way.
    ++counters_.hold_refused;
    to_channel(ip_packet);
    return;
  }
  send_native(id, facts.payload, now);
}

RelayId EngineCore::open_relay(const FlowKey& flow, Timestamp now) {
  if (relays_.full()) {
    const RelayId oldest = relays_.oldest();
    close_relay(oldest);
    ++counters_.relays_evicted;
  }
  const RelayId id = relays_.add(flow, now);
  if (!io_.open_relay(id, flow)) {
    relays_.remove(id);
    ++counters_.relay_open_failed;
    return kNoRelay;
  }
  ++counters_.relays_opened;
  return id;
}

void EngineCore::close_relay(RelayId id) {
  held_.drop_relay(id);
  io_.close_relay(id);
  relays_.remove(id);
}

void EngineCore::send_native(RelayId id, common::Bytes payload, Timestamp now) {
  const bool v4 = relays_.flow(id).client.family == common::IpFamily::v4;
  ++counters_.to_native.packets;
  counters_.to_native.bytes += payload.size() + (v4 ? kIpv4UdpHeaders : kIpv6UdpHeaders);
  Relay& r = relays_.relay(id);
  ++r.counters.tx_packets;
  r.counters.tx_bytes += payload.size();
  relays_.used(id, now);
  io_.send_native(id, payload);
}

void EngineCore::to_channel(common::Bytes ip_packet) {
  if (ip_packet.empty()) return;  // an empty message would read as a closed pair
  if (dns_.may_rewrite_to_channel(ip_packet) && ip_packet.size() <= dns_packet_->size()) {
    const std::span<std::uint8_t> copy(dns_packet_->data(), ip_packet.size());
    std::copy(ip_packet.begin(), ip_packet.end(), copy.begin());
    if (dns_.to_channel(copy)) ip_packet = copy;
  }
  ++counters_.to_channel.packets;
  counters_.to_channel.bytes += ip_packet.size();
  io_.send_channel(ip_packet);
}

void EngineCore::from_relay(RelayId id, common::Bytes udp_payload, Timestamp now) {
  if (!relays_.live(id)) {
    ++counters_.relay_unknown;
    return;
  }
  const std::size_t n = write_reply_packet(relays_.flow(id), udp_payload, *reply_, reply_checksum_);
  if (n == 0) {
    ++counters_.reply_too_large;
    return;
  }
  const common::Bytes packet(reply_->data(), n);
  classifier_->classify(packet, Direction::inbound_native, now);
  Relay& r = relays_.relay(id);
  ++r.counters.rx_packets;
  r.counters.rx_bytes += udp_payload.size();
  relays_.used(id, now);
  ++counters_.from_native.packets;
  counters_.from_native.bytes += n;
  io_.write_tun(packet);
  drain_events();
}

void EngineCore::from_channel(common::Bytes ip_packet, Timestamp now) {
  if (ip_packet.empty()) return;
  if (dns_.may_rewrite_from_channel(ip_packet) && ip_packet.size() <= dns_packet_->size()) {
    const std::span<std::uint8_t> copy(dns_packet_->data(), ip_packet.size());
    std::copy(ip_packet.begin(), ip_packet.end(), copy.begin());
    if (dns_.from_channel(copy)) ip_packet = copy;
  }
  classifier_->classify(ip_packet, Direction::inbound_channel, now);
  ++counters_.from_channel.packets;
  counters_.from_channel.bytes += ip_packet.size();
  io_.write_tun(ip_packet);
  drain_events();
}

Timestamp EngineCore::next_expiry() const {
  return std::min({classifier_->next_expiry(), held_.next_release(),
                   relays_.next_idle_expiry()});
}

void EngineCore::on_expiry(Timestamp now) {
  release_held(now);
  classifier_->on_expiry(now);
  drain_events();
  for (RelayId id = relays_.find_idle(now); id != kNoRelay; id = relays_.find_idle(now)) {
    close_relay(id);
    ++counters_.relays_closed;
  }
}

void EngineCore::release_held(Timestamp now) {
  held_.release_due(now, [&](RelayId id, common::Bytes payload) {
    send_native(id, payload, now);
  });
}

void EngineCore::drain_events() {
  while (classifier_->pending_events() != 0) {
    const std::size_t n = classifier_->drain_events(events_);
    for (std::size_t i = 0; i < n; ++i) {
      const FlowEvent& e = events_[i];
      // A forgotten flow's relay goes with it. A flow failed back to the channel keeps its
      // relay until it idles out: the server may still answer there, and that answer
      // belongs to the application.
      const bool confirmed = e.kind == FlowEvent::Kind::confirmed;
      if (!confirmed && e.kind != FlowEvent::Kind::failed_back &&
          e.kind != FlowEvent::Kind::forgotten) {
        continue;
      }
      const RelayId id = relays_.find(e.flow);
      if (id == kNoRelay) continue;
      if (e.kind != FlowEvent::Kind::forgotten) {
        io_.relay_confirmed(id, confirmed);
        continue;
      }
      close_relay(id);
      ++counters_.relays_closed;
    }
  }
}

void EngineCore::network_changed(Timestamp now, ChangedFamilies changed) {
  ++counters_.network_changes;
  release_held(now);
  // Collect first: closing changes the LRU order being walked.
  std::vector<RelayId> ids;  // allocates: a network change is not the packet path
  ids.reserve(relays_.size());
  for (RelayId id = relays_.newest(); id != kNoRelay; id = relays_.older(id)) {
    const bool v4 = relays_.flow(id).server.family == common::IpFamily::v4;
    if (v4 ? changed.v4 : changed.v6) ids.push_back(id);
  }
  for (RelayId id : ids) {
    io_.close_relay(id);
    if (!io_.open_relay(id, relays_.flow(id))) {
      held_.drop_relay(id);
      relays_.remove(id);
      ++counters_.relays_closed;
      ++counters_.relay_open_failed;
    }
  }
}

}  // namespace quicstep::client::tun
