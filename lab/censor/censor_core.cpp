#include "lab/censor/censor_core.hpp"

#include <algorithm>

namespace quicstep::censor {

using common::Bytes;
using common::FlowKey;
using common::Observation;
using common::Timestamp;

namespace {

constexpr std::uint16_t kDnsPort = 53;

common::HandshakeObserverConfig observer_config(const CensorConfig& c) {
  common::HandshakeObserverConfig o;
  o.max_flows = c.max_flows;
  o.flow_idle_timeout = c.flow_idle_timeout;
  o.first_datagram_only = c.first_datagram_only;
  return o;
}

}  // namespace

std::string_view to_string(Action action) {
  switch (action) {
    case Action::pass: return "pass";
    case Action::drop: return "drop";
    case Action::drop_and_inject: return "drop_and_inject";
    case Action::pass_and_inject: return "pass_and_inject";
  }
  return "?";
}

std::string_view to_string(Rule rule) {
  switch (rule) {
    case Rule::none: return "none";
    case Rule::quic_sni: return "quic_sni";
    case Rule::tcp_sni: return "tcp_sni";
    case Rule::dns_name: return "dns_name";
    case Rule::residual: return "residual";
    case Rule::strict_all_quic: return "strict_all_quic";
    case Rule::strict_short_header: return "strict_short_header";
    case Rule::wireguard: return "wireguard";
    case Rule::spared: return "spared";
  }
  return "?";
}

CensorCore::CensorCore(CensorConfig config, Blocklist blocklist, std::uint64_t rng_seed)
    : config_(std::move(config)),
      blocklist_(std::move(blocklist)),
      observer_(observer_config(config_)),
      flows_(std::max<std::size_t>(config_.max_flows, 1), FlowHash{}),
      residual_(std::max<std::size_t>(config_.max_residual, 1), config_.residual_period),
      rng_(rng_seed) {}

bool CensorCore::is_quic_port(std::uint16_t port) const {
  return std::find(config_.quic_ports.begin(), config_.quic_ports.end(), port) != config_.quic_ports.end();
}

bool CensorCore::coin() {
  if (config_.block_probability >= 1.0) return true;
  if (config_.block_probability <= 0.0) return false;
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < config_.block_probability;
}

void CensorCore::on_expiry(Timestamp now) {
  residual_.expire(now);
  while (!flows_.empty() && now - flows_.value(flows_.oldest()).last_seen > config_.flow_idle_timeout) {
    flows_.erase(flows_.oldest());
  }
}

std::vector<DecisionRecord> CensorCore::take_decisions() {
  std::vector<DecisionRecord> out(std::make_move_iterator(decisions_.begin()),
                                  std::make_move_iterator(decisions_.end()));
  decisions_.clear();
  return out;
}

void CensorCore::record(Timestamp now, const FlowKey& flow, Rule rule, Action action,
                        std::string name, std::string matched) {
  if (config_.max_pending_decisions == 0) return;
  if (decisions_.size() >= config_.max_pending_decisions) {
    decisions_.pop_front();
    ++counters_.decisions_lost;
  }
  decisions_.push_back({now, flow, rule, action, std::move(name), std::move(matched)});
}

Verdict CensorCore::finish(Verdict verdict) {
  if (verdict.action == Action::pass || verdict.action == Action::pass_and_inject) {
    ++counters_.passed;
  } else {
    ++counters_.dropped;
  }
  counters_.injected += verdict.inject.size();
  return verdict;
}

Verdict CensorCore::decide(Bytes ip_packet, Timestamp now) {
  ++counters_.packets;
  on_expiry(now);
  const Observation seen = observer_.observe(ip_packet, now);
  if (!seen.ip) {
    ++counters_.unparsed;
    return finish({});
  }
  const common::IpPacket& ip = *seen.ip;
  if (!ip.udp && !ip.tcp) return finish({});
  if (ip.src_port == kDnsPort || ip.dst_port == kDnsPort) return finish(decide_dns(seen, now));

  const FlowKey key = seen.from_client ? FlowKey::from_client(ip) : FlowKey::from_server(ip);
  auto handle = flows_.find(key);
  if (handle == Flows::npos) {
    if (flows_.full()) {
      flows_.erase(flows_.oldest());
      ++counters_.flows_evicted;
    }
    handle = flows_.insert(key);
    FlowState& flow = flows_.value(handle);
    flow.last_seen = now;
    Verdict v = decide_new_flow(seen, key, flow, now);
    if (v.action != Action::pass || flow.decided) return finish(std::move(v));
  } else {
    flows_.touch(handle);
  }
  FlowState& flow = flows_.value(handle);
  flow.last_seen = now;
  if (flow.blocked) return finish({Action::drop, Rule::none, {}});
  // WireGuard re-handshakes on the same flow every two minutes: any handshake message of a
  // flow not yet blocked is judged, not only the first packet's.
  if (config_.block_wireguard && ip.udp && is_wireguard_handshake(classify_wireguard(ip.payload))) {
    return finish(block_wireguard(flow, key, now));
  }
  if (flow.decided || !seen.client_hello) return finish({});
  return finish(decide_hello(seen, key, flow, now));
}

Verdict CensorCore::decide_new_flow(const Observation& seen, const FlowKey& key, FlowState& flow,
                                    Timestamp now) {
  const common::IpPacket& ip = *seen.ip;
  if (config_.residual_period.count() > 0 && residual_.blocked(ResidualKey::of(key), now)) {
    ++counters_.residual_blocks;
    return block(flow, key, Rule::residual, now);
  }
  if (!ip.udp || !(is_quic_port(key.server_port) || is_quic_port(key.client_port))) return {};
  if (config_.block_all_quic) {
    ++counters_.strict_blocks;
    return block(flow, key, Rule::strict_all_quic, now);
  }
  // The first packet seen carries a short header (first bit 0): no Initial was seen.
  if (config_.block_short_header_first && !ip.payload.empty() && (ip.payload[0] & 0x80) == 0) {
    ++counters_.strict_blocks;
    return block(flow, key, Rule::strict_short_header, now);
  }
  return {};
}

Verdict CensorCore::block_wireguard(FlowState& flow, const FlowKey& key, Timestamp now) {
  ++counters_.wireguard_blocks;
  if (config_.residual_period.count() > 0) residual_.block(ResidualKey::of(key), now);
  return block(flow, key, Rule::wireguard, now);
}

Verdict CensorCore::block(FlowState& flow, const FlowKey& key, Rule rule, Timestamp now) {
  flow.decided = true;
  flow.blocked = true;
  record(now, key, rule, Action::drop);
  return {Action::drop, rule, {}};
}

Verdict CensorCore::decide_hello(const Observation& seen, const FlowKey& key, FlowState& flow,
                                 Timestamp now) {
  const common::IpPacket& ip = *seen.ip;
  const std::string& sni = seen.client_hello->server_name;
  ++counters_.client_hellos;
  flow.decided = true;
  auto match = blocklist_.match(sni);
  if (!match) return {};
  if (!coin()) {
    ++counters_.spared;
    record(now, key, Rule::spared, Action::pass, sni, match->rule);
    return {Action::pass, Rule::spared, {}};
  }
  const bool quic = ip.udp.has_value();
  const bool drop = quic || config_.tcp_drop;
  if (drop) {
    flow.blocked = true;
    if (config_.residual_period.count() > 0) residual_.block(ResidualKey::of(key), now);
  }
  Verdict v{drop ? Action::drop : Action::pass, quic ? Rule::quic_sni : Rule::tcp_sni, {}};
  if (quic) {
    ++counters_.quic_sni_blocks;
  } else {
    ++counters_.tcp_sni_blocks;
    // The packet that completed the ClientHello is the client's. The server's next expected
    // byte is this segment's first (dropped) or the one after it (passed); the client's is
    // what it acknowledges. Exact sequence numbers, so Linux resets at once (RFC 5961).
    const common::TcpView& tcp = *ip.tcp;
    const auto length = static_cast<std::uint32_t>(ip.payload.size());
    v.inject.push_back(build_tcp_rst(ip.src, ip.dst, ip.src_port, ip.dst_port,
                                     drop ? tcp.seq : tcp.seq + length, tcp.ack));
    v.inject.push_back(build_tcp_rst(ip.dst, ip.src, ip.dst_port, ip.src_port, tcp.ack, tcp.seq + length));
    v.action = drop ? Action::drop_and_inject : Action::pass_and_inject;
  }
  record(now, key, v.rule, v.action, sni, match->rule);
  return v;
}

Verdict CensorCore::decide_dns(const Observation& seen, Timestamp now) {
  const common::IpPacket& ip = *seen.ip;
  if (!config_.dns_forge || !ip.udp || !seen.dns || seen.dns->header.qr || ip.dst_port != kDnsPort ||
      seen.dns->questions.empty()) {
    return {};
  }
  const std::string& name = seen.dns->questions.front().name;
  auto match = blocklist_.match(name);
  if (!match) return {};
  const FlowKey key = FlowKey::from_client(ip);
  auto answer = forge_dns_answer(*seen.dns, config_.forged);
  if (!answer) return {};  // not an A/AAAA question: nothing to forge
  if (!coin()) {
    ++counters_.spared;
    record(now, key, Rule::spared, Action::pass, name, match->rule);
    return {Action::pass, Rule::spared, {}};
  }
  ++counters_.dns_forged;
  Verdict v{Action::pass_and_inject, Rule::dns_name, {}};
  v.inject.push_back(build_udp(ip.dst, ip.src, ip.dst_port, ip.src_port, *answer));
  record(now, key, v.rule, v.action, name, match->rule);
  return v;
}

}  // namespace quicstep::censor
