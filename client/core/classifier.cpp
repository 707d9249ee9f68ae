#include "client/core/classifier.hpp"

#include <algorithm>

#include "common/quic_header.hpp"

namespace quicstep::client::core {
namespace {

using common::kIpProtoTcp;
using common::kIpProtoUdp;

constexpr std::uint16_t kDnsPort = 53;

// Inlined into classify(): each is called from one or two places, and the calls cost more
// than their bodies on the per-packet path.
#define QS_HOT [[gnu::always_inline]] inline

// A protected QUIC packet is at least 21 bytes: header protection samples 16 bytes starting
// 4 bytes after the packet-number offset (RFC 9001 §5.4.2), which is >= 1. Anything
// shorter on a QUIC port is not a QUIC short header, so it is not a candidate for native.
constexpr std::size_t kMinShortHeaderLength = 1 + 4 + 16;

// How long a flow to a server that moves its clients to a preferred address stays on the
// channel at most (preferred_address_hold_end()).
constexpr int kPreferredAddressRtts = 4;
constexpr Duration kPreferredAddressMinHold = std::chrono::milliseconds(500);

Path to_path(Route r) { return r == Route::native ? Path::native : Path::channel; }

bool is_dns(const PacketFacts& p) { return p.src_port() == kDnsPort || p.dst_port() == kDnsPort; }

}  // namespace

std::string_view to_string(Direction d) {
  switch (d) {
    case Direction::outbound: return "outbound";
    case Direction::inbound_native: return "inbound_native";
    case Direction::inbound_channel: return "inbound_channel";
    case Direction::outbound_copy: return "outbound_copy";
  }
  return "?";
}

std::string_view to_string(Path p) {
  switch (p) {
    case Path::channel: return "channel";
    case Path::native: return "native";
    case Path::drop: return "drop";
  }
  return "?";
}

std::string_view to_string(Reason r) {
  static constexpr std::array<std::string_view, kReasonCount> names = {
      "not_ip",           "fragment",  "dns",
      "tcp",              "quic_long_header",
      "quic_unparseable", "quic_short_native",
      "hold",             "destination_non_migrating",
      "migration_failed", "other_udp", "other_protocol",
      "inbound",          "migration_confirmed"};
  const auto i = static_cast<std::size_t>(r);
  return i < names.size() ? names[i] : "?";
}

std::string_view to_string(FlowEvent::Kind k) {
  switch (k) {
    case FlowEvent::Kind::moved_native: return "moved_native";
    case FlowEvent::Kind::confirmed: return "confirmed";
    case FlowEvent::Kind::failed_back: return "failed_back";
    case FlowEvent::Kind::forgotten: return "forgotten";
  }
  return "?";
}

Classifier::Classifier(const Policy& policy, std::uint64_t seed)
    : policy_(policy),
      flows_(std::max<std::size_t>(policy.flows.capacity, 1), policy.flows.idle_timeout, seed),
      destinations_(std::max<std::size_t>(policy.destinations.capacity, 1),
                    policy.destinations.ttl, seed + 1, policy.destinations.first_penalty),
      preferred_(std::clamp<std::size_t>(policy.destinations.capacity, 1,
                                         PreferredAddresses::kMaxCapacity),
                 policy.destinations.ttl, seed + 3),
      deadlines_(flows_.capacity()),
      events_(std::max<std::size_t>(policy.event_capacity, 1)) {
  set_quic_ports();
}

void Classifier::set_quic_ports() {
  quic_ports_.fill(0);
  for (const std::uint16_t port : policy_.quic_ports) {
    quic_ports_[port >> 6] |= std::uint64_t{1} << (port & 63);
  }
}

bool Classifier::update_policy(const Policy& policy) {
  if (policy.flows.capacity != policy_.flows.capacity ||
      policy.destinations.capacity != policy_.destinations.capacity ||
      policy.event_capacity != policy_.event_capacity ||
      policy.flows.idle_timeout != policy_.flows.idle_timeout ||
      policy.destinations.ttl != policy_.destinations.ttl ||
      policy.destinations.first_penalty != policy_.destinations.first_penalty) {
    return false;
  }
  policy_ = policy;
  set_quic_ports();
  return true;
}

Decision Classifier::classify(Bytes ip_packet, Direction dir, Timestamp now) {
  counted_flow_ = nullptr;
  const bool out = dir == Direction::outbound || dir == Direction::outbound_copy;
  Decision d{out ? Path::channel : Path::native, Reason::not_ip};
  PacketFacts facts;
  if (read_packet_facts(ip_packet, &facts)) {
    if (out) {
      d = outbound(facts, now);
    } else {
      d = {Path::native, Reason::inbound};
      inbound(facts, dir, now, &d);
    }
  }
  if (dir == Direction::outbound_copy) {
    count(counted_flow_, {Path::channel, d.reason}, Direction::outbound, ip_packet.size());
  } else {
    count(counted_flow_, d, dir, ip_packet.size());
  }
  return d;
}

QS_HOT Decision Classifier::outbound(const PacketFacts& p, Timestamp now) {
  const bool udp = p.protocol() == kIpProtoUdp;
  const bool tcp = p.protocol() == kIpProtoTcp;
  // A fragment's ports are unknown (or its datagram's rest is): never guess.
  if (p.is_fragment && (udp || tcp)) return {Path::channel, Reason::fragment};
  if (tcp) {
    if (policy_.dns_to_channel && is_dns(p)) return {Path::channel, Reason::dns};
    return {policy_.tcp_to_channel ? Path::channel : Path::native, Reason::tcp};
  }
  if (!udp) return {to_path(policy_.other_protocols), Reason::other_protocol};
  if (policy_.dns_to_channel && is_dns(p)) return {Path::channel, Reason::dns};
  if (is_quic_port(p.dst_port())) return outbound_quic(p, now);
  return {to_path(policy_.other_udp), Reason::other_udp};
}

QS_HOT Decision Classifier::outbound_quic(const PacketFacts& p, Timestamp now) {
  const Bytes payload = p.payload;
  if (payload.empty()) return {Path::channel, Reason::quic_unparseable};
  const FlowKey& key = p.tuple;
  if (common::is_long_header(payload[0])) {
    const Handle h = find_or_create(key, now);
    FlowEntry& e = flows_.entry(h);
    if (!e.seen_long_out) {
      e.seen_long_out = true;
      e.first_long_out = now;
      preferred_.handshake_began(key, now);
    }
    e.last_long_out = now;
    counted_flow_ = &e;
    return {Path::channel, Reason::quic_long_header};
  }
  if (payload.size() < kMinShortHeaderLength) return {Path::channel, Reason::quic_unparseable};
  return short_header(find_or_create(key, now), key, now);
}

// The hot path: an established flow's short header. The rest of the lifecycle is in
// short_header_transition().
QS_HOT Decision Classifier::short_header(Handle h, const FlowKey& key, Timestamp now) {
  FlowEntry& e = flows_.entry(h);
  counted_flow_ = &e;
  if (e.short_packets != 0xffffffffu) ++e.short_packets;
  if (e.state == FlowState::native_confirmed) return {Path::native, Reason::quic_short_native};
  return short_header_transition(h, key, now);
}

Decision Classifier::short_header_transition(Handle h, const FlowKey& key, Timestamp now) {
  FlowEntry& e = flows_.entry(h);
  switch (e.state) {
    case FlowState::native_confirmed:
      return {Path::native, Reason::quic_short_native};
    case FlowState::native_pending:
      // Past the bound, the packet that completes the evidence goes back to the channel
      // (this one is not counted yet: +1). Before it, or without it: native.
      if (now < e.deadline || e.native_packets + 1 < policy_.watchdog.min_unanswered_packets) {
        return {Path::native, Reason::quic_short_native, e.switch_end};
      }
      fail(h, key, now);
      return {Path::channel, Reason::migration_failed};
    case FlowState::pinned_channel:
      return {Path::channel, Reason::destination_non_migrating};
    case FlowState::failed:
      return {Path::channel, Reason::migration_failed};
    case FlowState::handshake:
    case FlowState::held:
      break;
  }
  if (destinations_.contains(key.server, key.server_port, now)) {
    e.state = FlowState::pinned_channel;
    ++counters_.pinned_by_cache;
    return {Path::channel, Reason::destination_non_migrating};
  }
  if (!e.seen_long_out && e.short_packets == 1) client_moved(key, now);
  if (preferred_.offers_preferred_address(key, now) && now < preferred_address_hold_end(e)) {
    if (e.state != FlowState::held) ++counters_.held_for_preferred_address;
    e.state = FlowState::held;
    return {Path::channel, Reason::hold};
  }
  const HoldPolicy& hold = policy_.hold;
  const bool by_count = hold.packets != 0 && e.short_packets <= hold.packets;
  const bool by_time = hold.time != Duration::zero() && now < e.first_seen + hold.time;
  if (by_count || by_time) {
    e.state = FlowState::held;
    return {Path::channel, Reason::hold};
  }
  move_native(h, key, now);
  return {Path::native, Reason::quic_short_native, e.switch_end};
}

// The flow's first packet was a short header: if its client has just moved a connection
// from its handshake's server address (PreferredAddresses), that server is learnt, and the
// connection's old flow, if it was held for it, stays on the channel for good (the client
// has left it; a late packet there must not move it now, two migrations at once are what
// such a server fails on). An old flow moved native already is counted.
void Classifier::client_moved(const FlowKey& key, Timestamp now) {
  const std::optional<FlowKey> from = preferred_.client_moved(key, now);
  if (!from) return;
  ++counters_.preferred_address_moves;
  const Handle h = flows_.find(*from);
  if (h == FlowTable::npos) return;
  FlowEntry& old = flows_.entry(h);
  if (old.state == FlowState::handshake || old.state == FlowState::held) {
    old.state = FlowState::pinned_channel;
  } else if (old.state == FlowState::native_pending || old.state == FlowState::native_confirmed) {
    ++counters_.preferred_address_after_move;
  }
}

// How long a flow to a server known to offer a preferred address stays on the channel: until
// its client has moved (client_moved() pins it then) or, for a client that does not take the
// address, kPreferredAddressRtts handshake RTTs after its last long header, at least
// kPreferredAddressMinHold (the move comes once the handshake is confirmed, and ngtcp2's
// client validates the new path first: 60-120 ms after the handshake in the unshaped lab).
Timestamp Classifier::preferred_address_hold_end(const FlowEntry& e) const {
  const Duration rtt = e.rtt != Duration::zero() ? e.rtt : policy_.watchdog.unknown_rtt;
  const Timestamp from = e.seen_long_out ? e.last_long_out : e.first_seen;
  return from + std::max(kPreferredAddressRtts * rtt, kPreferredAddressMinHold);
}

void Classifier::inbound(const PacketFacts& p, Direction dir, Timestamp now, Decision* d) {
  if (p.protocol() != kIpProtoUdp || p.is_fragment || !is_quic_port(p.src_port())) return;
  const FlowKey key{p.tuple.server, p.tuple.client, p.tuple.server_port, p.tuple.client_port,
                    p.tuple.protocol};
  const Handle h = flows_.find(key);
  if (h == FlowTable::npos) return;
  FlowEntry& e = flows_.entry(h);
  flows_.touch(h, now);
  counted_flow_ = &e;
  if (!p.payload.empty() && common::is_long_header(p.payload[0]) && e.seen_long_out &&
      e.rtt == Duration::zero()) {
    e.rtt = std::max(now - e.first_long_out, Duration(1));
    ++counters_.rtt_samples;
  }
  if (e.state != FlowState::native_pending) return;
  // Only short headers judge a migration: a late long header is a handshake retransmission.
  const bool is_short = !p.payload.empty() && !common::is_long_header(p.payload[0]);
  if (dir == Direction::inbound_channel) {
    // An answer to the old address after the bound (packets in flight before the server
    // saw the new path arrive within about one RTT): a server that keeps the stale path.
    if (is_short && now >= e.deadline) fail(h, key, now);
    return;
  }
  if (!is_short) return;
  if (judge_answer(h, key, now)) d->reason = Reason::migration_confirmed;
}

bool Classifier::judge_answer(Handle h, const FlowKey& key, Timestamp now) {
  FlowEntry& e = flows_.entry(h);
  if (now >= e.deadline && has_evidence(e)) {
    fail(h, key, now);  // too late: the bound is the bound, whenever the timer fires
    return false;
  }
  // An answer on the native path, within the bound or to a flow that was quiet at it.
  e.state = FlowState::native_confirmed;
  deadlines_.erase(h);
  ++counters_.confirmed;
  push_event(FlowEvent::Kind::confirmed, key, now, &e);
  return true;
}

void Classifier::native_report(const FlowKey& flow, std::uint64_t sent, Timestamp answered_at,
                               Timestamp now) {
  const Handle h = flows_.find(flow);
  if (h == FlowTable::npos) return;
  flows_.touch(h, now);
  FlowEntry& e = flows_.entry(h);
  if (e.state != FlowState::native_pending) return;
  e.native_packets += sent;
  if (answered_at != Timestamp{}) {
    judge_answer(h, flow, std::min(answered_at, now));
  } else if (now >= e.deadline && has_evidence(e)) {
    fail(h, flow, now);  // past the bound (quiet at it, or reported late): the evidence is in
  }
}

QS_HOT FlowTable::Handle Classifier::find_or_create(const FlowKey& key, Timestamp now) {
  Handle h = flows_.find(key);
  if (h != FlowTable::npos) {
    flows_.touch(h, now);
    return h;
  }
  if (flows_.full()) {
    drop_flow(flows_.oldest(), now);
    ++counters_.flows_evicted;
  }
  h = flows_.insert(key, now);
  ++counters_.flows_created;
  return h;
}

void Classifier::drop_flow(Handle h, Timestamp now) {
  FlowEntry& e = flows_.entry(h);
  if (e.state == FlowState::native_pending) ++counters_.pending_forgotten;
  deadlines_.erase(h);
  if (e.announced) push_event(FlowEvent::Kind::forgotten, flows_.key(h), now, nullptr);
  flows_.erase(h);
}

Timestamp Classifier::native_switch_end(const FlowEntry& e, Timestamp now) const {
  const NativeSwitchPolicy& n = policy_.native_switch;
  // Without the watchdog a moved flow is confirmed at once and its later packets bypass the
  // queue (the kernel's native set): no wait could keep them in order.
  if (!n.enabled || !policy_.watchdog.enabled) return {};
  Timestamp end;
  if (e.rtt != Duration::zero() && e.seen_long_out) {
    const Duration rtt = std::min<Duration>(e.rtt, std::chrono::seconds(10));  // no overflow
    const Duration d = std::max(n.min_delay, rtt * n.rtt_percent / 100);
    end = e.last_long_out + std::min(d, n.max_delay);
  } else {
    end = now + n.unknown_rtt_delay;
  }
  return end > now ? end : Timestamp{};
}

Duration Classifier::watchdog_bound(const FlowEntry& e) const {
  const WatchdogPolicy& w = policy_.watchdog;
  // Capped before multiplying (a clock jump must not overflow), and written so that a
  // policy with min > max still yields a defined bound (min wins).
  const Duration rtt = std::min(e.rtt != Duration::zero() ? e.rtt : w.unknown_rtt, w.max_timeout);
  return std::max(w.min_timeout, std::min(rtt * w.rtt_multiplier, w.max_timeout));
}

bool Classifier::has_evidence(const FlowEntry& e) const {
  // Every native packet of a native_pending flow is unanswered (an answer confirms it).
  return e.native_packets >= policy_.watchdog.min_unanswered_packets;
}

void Classifier::move_native(Handle h, const FlowKey& key, Timestamp now) {
  FlowEntry& e = flows_.entry(h);
  e.moved_native = now;
  ++counters_.moved_native;
  e.switch_end = native_switch_end(e, now);
  if (e.switch_end != Timestamp{}) {
    ++counters_.switch_waits;
    counters_.switch_wait_ns += static_cast<std::uint64_t>((e.switch_end - now).count());
  }
  if (!policy_.watchdog.enabled) {
    e.state = FlowState::native_confirmed;  // never watched: native for good
    push_event(FlowEvent::Kind::confirmed, key, now, &e);
    return;
  }
  e.state = FlowState::native_pending;
  // The bound starts when the first native packet may leave.
  e.deadline = std::max(now, e.switch_end) + watchdog_bound(e);
  deadlines_.set(h, e.deadline);
  push_event(FlowEvent::Kind::moved_native, key, now, &e);
}

void Classifier::fail(Handle h, const FlowKey& key, Timestamp now) {
  FlowEntry& e = flows_.entry(h);
  e.state = FlowState::failed;
  deadlines_.erase(h);
  destinations_.add(Destination{key.server, key.server_port},
                    NonMigratingReason::migration_failed, now);
  ++counters_.failed_back;
  push_event(FlowEvent::Kind::failed_back, key, now, &e);
}

void Classifier::push_event(FlowEvent::Kind kind, const FlowKey& key, Timestamp now,
                            FlowEntry* entry) {
  if (entry != nullptr) entry->announced = true;
  if (event_count_ == events_.size()) {
    ++counters_.events_lost;
    return;
  }
  events_[(event_head_ + event_count_) % events_.size()] = FlowEvent{kind, key, now};
  ++event_count_;
}

std::size_t Classifier::drain_events(std::span<FlowEvent> out) {
  const std::size_t n = std::min(out.size(), event_count_);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = events_[event_head_];
    event_head_ = (event_head_ + 1) % events_.size();
  }
  event_count_ -= n;
  return n;
}

void Classifier::count(FlowEntry* entry, Decision d, Direction dir, std::size_t bytes) {
  ++counters_.reasons[static_cast<std::size_t>(d.reason)];
  if (dir == Direction::outbound) {
    PathCounters& c = counters_.outbound[static_cast<std::size_t>(d.path)];
    ++c.packets;
    c.bytes += bytes;
    if (entry == nullptr) return;
    if (d.path == Path::native) {
      ++entry->native_packets;
      entry->native_bytes += bytes;
    } else {
      ++entry->channel_packets;
      entry->channel_bytes += bytes;
    }
    return;
  }
  PathCounters& c =
      dir == Direction::inbound_native ? counters_.inbound_native : counters_.inbound_channel;
  ++c.packets;
  c.bytes += bytes;
  if (entry == nullptr) return;
  ++entry->inbound_packets;
  entry->inbound_bytes += bytes;
}

Timestamp Classifier::next_expiry() const {
  return std::min(deadlines_.next(), flows_.next_idle_expiry());
}

void Classifier::on_expiry(Timestamp now) {
  while (!deadlines_.empty() && deadlines_.next() <= now) {
    const Handle h = deadlines_.top();
    if (has_evidence(flows_.entry(h))) {
      fail(h, flows_.key(h), now);
    } else {
      // Quiet at the bound: not judged now. It stays native_pending without a timer; its
      // next outbound packets (short_header_transition) or an answer decide.
      deadlines_.erase(h);
      ++counters_.quiet_at_bound;
    }
  }
  for (Handle h = flows_.find_idle(now); h != FlowTable::npos; h = flows_.find_idle(now)) {
    drop_flow(h, now);
    ++counters_.flows_expired;
  }
}

bool Classifier::forget(const FlowKey& flow, Timestamp now) {
  const Handle h = flows_.find(flow);
  if (h == FlowTable::npos) return false;
  drop_flow(h, now);
  ++counters_.flows_closed;
  return true;
}

bool Classifier::needs_inbound_watch(const FlowKey& flow) const {
  const Handle h = flows_.find(flow);
  return h != FlowTable::npos && flows_.entry(h).state == FlowState::native_pending;
}

const FlowEntry* Classifier::find_flow(const FlowKey& flow) const {
  const Handle h = flows_.find(flow);
  return h == FlowTable::npos ? nullptr : &flows_.entry(h);
}

std::vector<FlowInfo> Classifier::flows(std::size_t limit) const {
  std::vector<FlowInfo> out;
  out.reserve(std::min(limit, flows_.size()));
  for (Handle h = flows_.newest(); h != FlowTable::npos && out.size() < limit;
       h = flows_.older(h)) {
    out.push_back({flows_.key(h), flows_.entry(h)});
  }
  return out;
}

}  // namespace quicstep::client::core

#undef QS_HOT
