#include "client/daemon/routed_path.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "client/kernel/forwarding.hpp"
#include "client/kernel/link_header.hpp"
#include "client/kernel/nft_rules.hpp"
#include "common/ip_packet.hpp"
#include "net/clock.hpp"
#include "net/process.hpp"

namespace quicstep::client::daemon {

using core::Classifier;
using core::FlowEvent;
using kernel::GuardCounters;
using kernel::NativeGuard;
using kernel::UdpSocketId;
using kernel::FlowSet;
using kernel::SetElementOp;
using kernel::socket_may_carry;
namespace {

// The devices of this namespace that native packets may leave by: all but loopback and the
// channel.
std::vector<std::string> native_devices(const std::string& channel) {
  std::vector<std::string> out;
  struct if_nameindex* list = ::if_nameindex();
  if (list == nullptr) return out;
  for (const struct if_nameindex* i = list; i->if_index != 0; ++i) {
    const std::string name = i->if_name;
    if (name != "lo" && name != channel) out.push_back(name);
  }
  if_freenameindex(list);
  return out;
}

}  // namespace

ng_flow_key guard_key(const common::FlowKey& flow) {
  ng_flow_key k{};
  auto put = [](std::uint8_t* to, const common::IpAddress& a) {
    if (a.family == common::IpFamily::v4) {
      to[10] = 0xff;
      to[11] = 0xff;
      std::memcpy(to + 12, a.bytes.data(), 4);
    } else {
      std::memcpy(to, a.bytes.data(), 16);
    }
  };
  put(k.local, flow.client);
  put(k.remote, flow.server);
  k.local_port = htons(flow.client_port);
  k.remote_port = htons(flow.server_port);
  return k;
}

bool RoutedPath::has_socket(const common::FlowKey& flow) {
  const std::optional<bool> carried = sockets_.may_carry(flow);
  if (carried) return *carried;
  ++stats_.socket_lookup_failures;
  // Not known: assume it has. A stale rule costs a lookup; a deleted live one sends the
  // flow back through the channel, where the classifier moves it again.
  return true;
}

std::vector<common::FlowKey> RoutedPath::drain_closed_sockets() {
  std::unordered_set<common::FlowKey, common::FlowKeyHash> suspects;
  const bool complete = sockets_.drain([&](const UdpSocketId& s) {
    const auto [first, last] = flows_by_port_.equal_range(s.local_port);
    for (auto it = first; it != last; ++it) {
      if (socket_may_carry(s, it->second)) suspects.insert(it->second);
    }
  });
  if (!complete) {  // announcements lost: every flow is a suspect
    for (const auto& [key, f] : flows_) suspects.insert(key);
  }
  std::vector<common::FlowKey> closed;
  for (const auto& key : suspects) {
    auto it = flows_.find(key);
    if (it == flows_.end() || has_socket(key)) continue;  // gone already, or another socket
    ++stats_.sockets_closed;
    if (!it->second.scheduled) {  // switching: the classifier may not have announced it
      drop(key, it->second);
      closed.push_back(key);
    } else if (it->second.orphan) {
      drop(key, it->second);  // the classifier forgot it already
    } else {
      closed.push_back(key);
    }
  }
  return closed;
}

common::Outcome RoutedPath::open_guard(const RoutedPathOptions& options) {
  options_ = options;
  auto loaded = NativeGuard::load(options_.guard);
  if (!loaded) return common::Failure("native guard: " + loaded.error().message);
  guard_ = std::move(*loaded);
  if (guard_->replaced_stale_maps()) {
    spdlog::warn("native guard: maps pinned under {} by an earlier version did not fit this "
                 "one; replaced (start with --cleanup after a crash to avoid this)",
                 options_.guard.pin_dir);
  }
  if (auto w = set_writer_.open(); !w) return w;
  if (auto w = sockets_.open(); !w) return w;
  for (const auto& dev : native_devices(options_.channel_interface)) {
    if (auto w = guard_->attach(dev); !w) {
      return common::Failure("native guard on " + dev + ": " + w.error().message);
    }
    guarded_.insert(dev);
    ++stats_.devices_guarded;
  }
  return {};
}

// The channel's UDP source rewrite (ng_channel_egress), where it was taken at start: its
// tunnel addresses as the daemon knows them now, its program on the channel device as it is
// now. Called at start, whenever the table is replaced (new tunnel addresses, a re-created
// device) and by the healer (a program another tool detached: the native_guard piece).
ng_channel_source RoutedPath::channel_source(const kernel::RulesetSpec& spec) const {
  ng_channel_source c{};
  std::uint8_t a[16];
  if (!spec.tunnel_v4.empty() && kernel::guard_address(spec.tunnel_v4, a)) {
    std::memcpy(c.v4, a + 12, 4);
    c.has_v4 = 1;
  }
  if (!spec.tunnel_v6.empty() && kernel::guard_address(spec.tunnel_v6, a)) {
    std::memcpy(c.v6, a, 16);
    c.has_v6 = 1;
  }
  c.link_header = channel_ethernet_ ? 14 : 0;
  return c;
}

common::Outcome RoutedPath::sync_channel_source(const kernel::RulesetSpec& spec) {
  if (!guard_ || !spec.udp_source_by_guard) return {};
  const ng_channel_source want = channel_source(spec);
  const std::string& dev = options_.channel_interface;
  if (if_nametoindex(dev.c_str()) == 0) return {};  // gone: nothing leaves through it
  if (std::memcmp(&want, &channel_source_, sizeof want) != 0) {
    if (auto written = guard_->set_channel_source(want); !written) {
      ++stats_.channel_source_failures;
      return written;
    }
    channel_source_ = want;
    spdlog::info("channel UDP source rewrite on {}: {} / {}", dev,
                 spec.tunnel_v4.empty() ? "-" : spec.tunnel_v4,
                 spec.tunnel_v6.empty() ? "-" : spec.tunnel_v6);
  }
  if (guard_->channel_attached(dev)) return {};
  const bool first = !channel_source_attached_;
  if (auto done = guard_->attach_channel(dev, want); !done) {
    ++stats_.channel_source_failures;
    return done;
  }
  channel_source_attached_ = true;
  if (!first) {
    ++stats_.channel_source_restored;
    spdlog::warn("channel UDP source rewrite was off {}: attached again", dev);
  }
  return {};
}

void RoutedPath::on_devices_checked() {
  if (!guard_) return;
  const std::vector<std::string> devices = native_devices(options_.channel_interface);
  // Devices that went: their DNS rules go, and one that comes back is new again. (No list
  // at all is a failed listing, not every device gone.)
  for (const auto& dev : std::vector<std::string>(ctx_.routing.spec().bound_devices)) {
    if (devices.empty() || std::find(devices.begin(), devices.end(), dev) != devices.end()) {
      continue;
    }
    if (auto removed = ctx_.routing.remove_bound_device(dev); !removed) {
      spdlog::warn("device {} went: {}", dev, removed.error().message);
    }
    guarded_.erase(dev);
  }
  for (const auto& dev : devices) {
    if (guarded_.count(dev) != 0) continue;
    // Its DNS rule first: a resolver's socket that names the device finds a route.
    if (auto added = ctx_.routing.add_bound_device(dev); !added) {
      spdlog::error("ip rule for DNS through new device {}: {}", dev, added.error().message);
    }
    if (auto w = guard_->attach(dev); !w) {
      ++stats_.guard_failures;
      spdlog::error("native guard on new device {}: {}", dev, w.error().message);
      continue;
    }
    guarded_.insert(dev);
    ++stats_.devices_guarded;
    spdlog::info("native guard attached to new device {}", dev);
  }
}

void RoutedPath::schedule(const common::FlowKey& flow, common::Timestamp due, bool watch,
                          common::Timestamp now) {
  auto [it, fresh] = flows_.try_emplace(flow);
  Flow& f = it->second;
  if (f.scheduled) return;  // rule added or due already
  if (fresh) flows_by_port_.emplace(flow.client_port, flow);
  f.scheduled = true;
  f.watch = watch;
  // Its held packets leave natively at the switch, before its element is added.
  if (f.switching) watch_flow(flow, f);
  if (due <= now) {
    add_rule(flow, f);
  } else {
    set_due(flow, f, due);
  }
}

void RoutedPath::set_due(const common::FlowKey& key, Flow& f, common::Timestamp at) {
  f.due = at;
  due_.push({at, key});
}

void RoutedPath::begin_switching(const common::FlowKey& flow, common::Timestamp now) {
  if (!hold_.is_open() || !ctx_.spec.switch_hold || flows_.count(flow) != 0) return;
  core::Classifier& classifier = *ctx_.classifier;
  const core::FlowEntry* e = classifier.find_flow(flow);
  if (e == nullptr || e->state != core::FlowState::handshake) return;
  if (classifier.destinations().contains(flow.server, flow.server_port, now)) return;
  const SetElementOp op{true, FlowSet::switching, flow, ctx_.spec.switching_timeout};
  if (auto added = set_writer_.apply(ctx_.spec.table, std::span(&op, 1)); !added) {
    ++stats_.switching_failures;
    spdlog::debug("{} (its short headers take the channel until its switch)",
                  added.error().first);
    return;
  }
  Flow& f = flows_[flow];
  flows_by_port_.emplace(flow.client_port, flow);
  f.switching = true;
  ++stats_.switching_added;
}

void RoutedPath::end_switching(const common::FlowKey& key, Flow& f) {
  if (!f.switching) return;
  f.switching = false;
  const SetElementOp op{false, FlowSet::switching, key, {}};
  if (auto removed = set_writer_.apply(ctx_.spec.table, std::span(&op, 1)); !removed) {
    ++stats_.switching_failures;  // it expires (switching_timeout)
    spdlog::debug("{}", removed.error().first);
  }
}

net::PacketVerdict RoutedPath::decide_held(const net::QueuedPacket& p) {
  core::Classifier& classifier = *ctx_.classifier;
  const kernel::RulesetSpec& spec = ctx_.spec;
  const common::Timestamp now = net::monotonic_now();
  const core::Decision d = classifier.classify(p.payload, core::Direction::outbound, now);
  const net::PacketVerdict channel{(p.mark & ~spec.mark_mask) | spec.mark_channel};
  auto ip = common::parse_ip_packet(p.payload);
  if (!ip.ok()) {
    ++stats_.held_to_channel;
    return channel;
  }
  const auto key = common::FlowKey::from_client(*ip);
  if (d.path == core::Path::native) {
    moved_native(key, ip->payload, d.not_before, now);
    return {std::nullopt, d.not_before};  // its own route: native
  }
  // Its next packets take the channel directly, decided from their copies as before the
  // hold (this one's copy is decided once more there: a flow held by the hold policy
  // counts it twice).
  ++stats_.held_to_channel;
  if (auto it = flows_.find(key); it != flows_.end()) {
    end_switching(key, it->second);
    if (!it->second.scheduled) drop(key, it->second);
  }
  return channel;
}

void RoutedPath::watch_flow(const common::FlowKey& key, Flow& f) {
  if (f.watch && !f.watching && guard_) {
    if (auto watched = guard_->watch(guard_key(key)); watched) {
      f.watching = true;
      watching_.insert(key);
      if (auto alias = masqueraded_key(key); alias && guard_->watch(*alias)) {
        f.masqueraded = alias;
      }
    } else {
      ++stats_.watch_failures;
      spdlog::debug("watch {}:{}: {}", key.server.to_string(), key.client_port,
                    watched.error().message);
    }
  }
}

void RoutedPath::add_rule(const common::FlowKey& key, Flow& f) {
  // The watch entry first: the guard counts from the first native packet.
  watch_flow(key, f);
  // Moved into routed4/6 and out of switching4/6 in one transaction: its later packets
  // bypass the queue, after the held ones left (on_timer releases them first).
  const SetElementOp ops[2] = {{true, FlowSet::routed, key, {}},
                               {false, FlowSet::switching, key, {}}};
  if (auto added = set_writer_.apply(ctx_.spec.table, std::span(ops, f.switching ? 2 : 1));
      !added) {
    ++stats_.rule_failures;
    spdlog::warn("{} (the flow stays on the channel)", added.error().first);
    end_switching(key, f);
    unwatch(key, f);
    f.restoring = false;
    f.due = common::Timestamp{std::numeric_limits<std::int64_t>::max()};  // not retried
    return;
  }
  f.rule = true;
  f.switching = false;
  ++(f.restoring ? stats_.rules_restored : stats_.rules_added);
  f.restoring = false;
}

std::optional<ng_flow_key> RoutedPath::masqueraded_key(const common::FlowKey& key) const {
  const std::string& source = key.client.family == common::IpFamily::v4
                                  ? ctx_.routing_spec.source_v4
                                  : ctx_.routing_spec.source_v6;
  if (source.empty() || source == key.client.to_string()) return std::nullopt;
  common::FlowKey nat = key;
  const int af = key.client.family == common::IpFamily::v4 ? AF_INET : AF_INET6;
  if (inet_pton(af, source.c_str(), nat.client.bytes.data()) != 1) return std::nullopt;
  return guard_key(nat);
}

void RoutedPath::unwatch(const common::FlowKey& key, Flow& f) {
  if (f.masqueraded && guard_) guard_->unwatch(*f.masqueraded);
  f.masqueraded.reset();
  if (f.watching && guard_) guard_->unwatch(guard_key(key));
  if (f.watching) watching_.erase(key);
  f.watching = false;
  f.watch = false;
}

void RoutedPath::drop(const common::FlowKey& key, Flow& f) {
  unwatch(key, f);
  end_switching(key, f);
  if (f.rule) {
    const SetElementOp op{false, FlowSet::routed, key, {}};
    if (auto removed = set_writer_.apply(ctx_.spec.table, std::span(&op, 1)); removed) {
      ++stats_.rules_deleted;
    } else {
      ++stats_.rule_failures;
      spdlog::debug("{}", removed.error().first);
    }
  }
  const auto [first, last] = flows_by_port_.equal_range(key.client_port);
  for (auto it = first; it != last; ++it) {
    if (it->second == key) {
      flows_by_port_.erase(it);
      break;
    }
  }
  flows_.erase(key);  // f dangles from here
}

void RoutedPath::on_event(const FlowEvent& e, common::Timestamp now) {
  auto it = flows_.find(e.flow);
  if (it == flows_.end()) return;
  Flow& f = it->second;
  switch (e.kind) {
    case FlowEvent::Kind::moved_native:
      break;
    case FlowEvent::Kind::confirmed:
      unwatch(e.flow, f);
      break;
    case FlowEvent::Kind::failed_back:
      drop(e.flow, f);
      break;
    case FlowEvent::Kind::forgotten:
      if (f.rule && has_socket(e.flow)) {
        unwatch(e.flow, f);
        f.orphan = true;
        set_due(e.flow, f, now + options_.orphan_check);
        ++stats_.orphans_kept;
      } else {
        drop(e.flow, f);
      }
      break;
  }
}

// Only what is due (the heap's earliest entries; an entry whose flow went or got another
// time since is stale and skipped) and the watched flows: not every flow at every tick, which
// took the daemon's loop at 5,000 flows (bench_flow_scale).
void RoutedPath::on_timer(common::Timestamp now) {
  core::Classifier& classifier = *ctx_.classifier;
  last_tick_ = now;
  if (hold_.is_open()) hold_.release_due(now);
  std::vector<common::FlowKey> gone;
  while (!due_.empty() && due_.top().at <= now) {
    const Due d = due_.top();
    due_.pop();
    auto it = flows_.find(d.flow);
    if (it == flows_.end() || it->second.due != d.at) continue;  // stale
    Flow& f = it->second;
    if (!f.rule) add_rule(d.flow, f);
    if (!f.orphan) continue;
    if (has_socket(d.flow)) {
      set_due(d.flow, f, now + options_.orphan_check);
    } else {
      gone.push_back(d.flow);
    }
  }
  if (guard_) {
    for (const auto& key : watching_) {
      Flow& f = flows_.at(key);
      ng_flow_state st{};
      if (!guard_->watched(guard_key(key), &st)) continue;
      if (ng_flow_state nat{}; f.masqueraded && guard_->watched(*f.masqueraded, &nat)) {
        st.sent += nat.sent;  // a LAN host's flow: counted under the router's address
        if (nat.first_answer_ns != 0 &&
            (st.first_answer_ns == 0 || nat.first_answer_ns < st.first_answer_ns)) {
          st.first_answer_ns = nat.first_answer_ns;
        }
      }
      const std::uint64_t total = st.sent;
      const std::uint64_t sent = total - std::min(total, f.sent_seen);
      f.sent_seen = total;
      if (total > 0 && f.first_native_seen == common::Timestamp::never()) {
        f.first_native_seen = now;  // its first native packet has left: the server migrates
      }
      const core::NativeSwitchPolicy& ns = ctx_.config.policy.native_switch;
      if (total > 0 && !f.lifted && now >= f.first_native_seen + ns.lift_delay) {
        f.lifted = true;
        const std::uint32_t lift = ns.lift_bytes;
        if (lift > 0 && lift_.is_open() && f.lift_header_len > 0) {
          stats_.lift_datagrams +=
              lift_.send(key, common::Bytes(f.lift_header.data(), f.lift_header_len), lift);
        }
      }
      const common::Timestamp answered{static_cast<std::int64_t>(st.first_answer_ns)};
      classifier.native_report(key, sent, answered, now);
    }
  }
  for (const auto& key : gone) {
    if (auto it = flows_.find(key); it != flows_.end()) drop(key, it->second);
  }
}

common::Timestamp RoutedPath::next_timer() const {
  common::Timestamp next = due_.empty() ? common::Timestamp::never() : due_.top().at;
  // While any flow is watched: every watch_poll.
  if (!watching_.empty()) next = std::min(next, last_tick_ + options_.watch_poll);
  if (hold_.is_open()) next = std::min(next, hold_.next_release());
  return next;
}

std::size_t RoutedPath::flows_with_rule() const {
  std::size_t n = 0;
  for (const auto& [key, f] : flows_) n += f.rule ? 1 : 0;
  return n;
}

std::size_t RoutedPath::flows_watched() const { return watching_.size(); }

common::Outcome RoutedPath::start() {
  kernel::RoutingSpec& routing = ctx_.routing_spec;
  const core::DaemonSettings& d = ctx_.config.daemon;
  routing.exempt_v4 = ctx_.spec.exempt_v4;
  routing.exempt_v6 = ctx_.spec.exempt_v6;
  if (auto opened = source_probe_.open(); !opened) return opened;
  routing.source_v4 = source_probe_.native_source(common::IpFamily::v4).value_or("");
  routing.source_v6 = source_probe_.native_source(common::IpFamily::v6).value_or("");
  if (routing.source_v4.empty() && routing.source_v6.empty()) {
    return common::Failure(
        "native_path = \"routed\": no default route in the main table to take the native "
        "source address from");
  }
  RoutedPathOptions o;
  o.flow_priority = routing.flow_priority();
  o.channel_interface = d.channel_interface;
  o.guard.pin_dir = d.guard_pin_dir;
  o.guard.quic_ports = ctx_.config.policy.quic_ports;
  o.guard.native_prefixes = d.native_prefixes_v4;
  o.guard.native_prefixes.insert(o.guard.native_prefixes.end(), d.native_prefixes_v6.begin(),
                                 d.native_prefixes_v6.end());
  // The channel's own servers (an interface tunnel's, a proxy client's): everything to them
  // is routed natively, TCP included (a proxy client's TCP relay, a TLS tunnel).
  for (const auto* exempt : {&d.channel_exempt_v4, &d.channel_exempt_v6}) {
    o.guard.native_prefixes.insert(o.guard.native_prefixes.end(), exempt->begin(),
                                   exempt->end());
  }
  o.orphan_check = ctx_.config.policy.flows.idle_timeout;
  if (ctx_.config.policy.native_switch.lift_bytes > 0) {
    if (auto opened = lift_.open(ctx_.spec.mark_native); !opened) {
      spdlog::warn("no lift datagrams ({}): a moved flow's server validates its new path under "
                   "the anti-amplification limit", opened.error().message);
    }
  }
  if (auto why = open_guard(o); !why) return why;
  channel_ethernet_ = kernel::is_ethernet_device(d.channel_interface);
  // Stateless addressing: UDP's source on the channel is the guard's to set (GSO packets'
  // checksums, nft_rules.hpp); where its program cannot go on, nft's rewrite stays.
  ctx_.spec.udp_source_by_guard = false;
  if (ctx_.spec.nat && ctx_.spec.stateless && ctx_.spec.tproxy_port == 0) {
    ctx_.spec.udp_source_by_guard = true;
    if (auto synced = sync_channel_source(); !synced) {
      ctx_.spec.udp_source_by_guard = false;
      spdlog::warn("channel UDP source rewrite on {} not possible ({}): nft sets UDP's source, "
                   "and UDP GSO packets through the channel may carry bad checksums",
                   d.channel_interface, synced.error().message);
    }
  }
  routing.bound_devices = native_devices(d.channel_interface);
  if (auto why = ctx_.routing.install(routing); !why) {
    return common::Failure("ip rule: " + why.error().message);
  }
  if (auto why = observer_.open(ctx_.spec.log_group); !why) return why;
  if (ctx_.spec.switch_hold && ctx_.spec.tproxy_port == 0) {
    net::NfqueueOptions q;
    q.queue = d.queue_outbound;
    q.gso = false;  // segments decided one by one, as the queue path's
    if (auto opened = hold_.open(q); !opened) {
      ctx_.spec.switch_hold = false;
      spdlog::warn("no hold at the switch (queue {}: {}): a moving flow's first native packets "
                   "may overtake its last ones on the channel", d.queue_outbound,
                   opened.error().message);
    }
  }
  ctx_.spec.forwarded_zone = kernel::host_forwards();
  if (auto why = ctx_.rules.install(ctx_.spec); !why) {
    return common::Failure("rules: " + why.error().message);
  }
  spdlog::info("routed native path: native source {} / {}, native flows in nft sets "
               "routed4/6 and one fwmark rule at priority {}",
               routing.source_v4.empty() ? "-" : routing.source_v4,
               routing.source_v6.empty() ? "-" : routing.source_v6, routing.flow_priority());
  return {};
}

void RoutedPath::stop() { remove_guard(ctx_.config.daemon.guard_pin_dir); }

std::vector<EventSource> RoutedPath::sources() {
  std::vector<EventSource> out = {
      {observer_.fd(),
       [this] { observer_.drain([this](const kernel::ObservedPacket& p) { observe(p); }); }},
      {sockets_.fd(),
       [this] {
         // The copies queued first: a packet sent before its socket closed was copied then,
         // and its copy handled after the close would make the flow again, with nothing
         // left to announce its end (its element stayed: seen with 2,000 flows closing).
         observer_.drain([this](const kernel::ObservedPacket& p) { observe(p); },
                         std::numeric_limits<int>::max());  // all of them (4 MB at most)
         const common::Timestamp now = net::monotonic_now();
         for (const auto& flow : drain_closed_sockets()) ctx_.classifier->forget(flow, now);
       }},
  };
  if (hold_.is_open()) {
    out.push_back({hold_.fd(), [this] {
                     hold_.drain([this](const net::QueuedPacket& p) { return decide_held(p); },
                                 net::monotonic_now());
                   }});
  }
  return out;
}

void RoutedPath::observe(const kernel::ObservedPacket& p) {
  core::Classifier& classifier = *ctx_.classifier;
  const common::Timestamp now = net::monotonic_now();
  // Logged on ingress: the server's handshake (the RTT); a prefix says it where the hook
  // does not (a tproxy channel's LAN hosts).
  const bool inbound = p.prefix.empty() ? p.outdev == 0 : p.prefix == kernel::kLogPrefixIn;
  if (inbound) {
    classifier.classify(p.payload, core::Direction::inbound_channel, now);
    return;
  }
  // Copied at the channel device's egress: after its link-layer header, if it has one.
  const std::optional<common::Bytes> packet = kernel::egress_ip_packet(p.payload,
                                                                       channel_ethernet_);
  if (!packet) return;
  const core::Decision d = classifier.classify(*packet, core::Direction::outbound_copy, now);
  auto ip = common::parse_ip_packet(*packet);
  if (!ip.ok()) return;
  const auto key = common::FlowKey::from_client(*ip);
  if (d.reason == core::Reason::quic_long_header) {
    begin_switching(key, now);
    return;
  }
  if (d.path != core::Path::native) return;
  moved_native(key, ip->payload, d.not_before, now);
}

void RoutedPath::moved_native(const common::FlowKey& key, common::Bytes quic,
                              common::Timestamp due, common::Timestamp now) {
  const core::FlowEntry* f = ctx_.classifier->find_flow(key);
  schedule(key, due, f != nullptr && f->state == core::FlowState::native_pending, now);
  if (auto it = flows_.find(key); it != flows_.end() && it->second.lift_header_len == 0) {
    const std::size_t n = std::min(quic.size(), it->second.lift_header.size());
    std::copy_n(quic.begin(), n, it->second.lift_header.begin());
    it->second.lift_header_len = static_cast<std::uint8_t>(n);
  }
}

void RoutedPath::follow_network(const NativeSources& sources) {
  kernel::RoutingSpec& r = ctx_.routing_spec;
  for (auto [flag, read, source] : {std::tuple{"-4", &sources.v4, &r.source_v4},
                                    std::tuple{"-6", &sources.v6, &r.source_v6}}) {
    const std::optional<std::string>& now = *read;
    if (!now || *now == *source) continue;  // unknown (a dump failed), or unchanged
    const std::vector<std::string> cmd = kernel::routed_channel_route(r, flag, *now);
    // Deleting fails harmlessly when the route went with its address; a refused replace
    // leaves the old source in the spec, to be tried again at the next check.
    const auto done = net::run_process(cmd);
    if (!done.ok() && !now->empty()) {
      ++stats_.source_failures;
      spdlog::warn("native source {} -> {}: {}", source->empty() ? "-" : *source, *now,
                   net::describe(cmd, done));
      continue;
    }
    spdlog::info("native source {} -> {} (the channel route follows)",
                 source->empty() ? "-" : *source, now->empty() ? "-" : *now);
    *source = *now;
    ++stats_.source_changes;
  }
}

void RoutedPath::on_channel_recreated() {
  channel_ethernet_ = kernel::is_ethernet_device(options_.channel_interface);
  if (auto done = restore_channel_routes(); !done) spdlog::error("{}", done.error().message);
}

std::vector<ChannelRoute> RoutedPath::channel_routes() const {
  std::vector<ChannelRoute> out;
  const kernel::RoutingSpec& r = ctx_.routing_spec;
  if (!r.source_v4.empty()) out.push_back({common::IpFamily::v4, r.routed_table});
  if (!r.source_v6.empty()) out.push_back({common::IpFamily::v6, r.routed_table});
  return out;
}

common::Outcome RoutedPath::restore_channel_routes() {
  std::string why;
  for (const auto& cmd : kernel::routed_routing_commands(ctx_.routing_spec)) {
    if (cmd.size() <= 2 || cmd[2] != "route") continue;
    if (auto r = net::run_process(cmd); !r.ok() && why.empty()) why = net::describe(cmd, r);
  }
  if (why.empty()) return {};
  return common::Failure(why);
}

// The table was installed afresh (another tool flushed the ruleset, the channel device came
// back, its addresses changed, a reload): its sets are empty. Each flow's element goes in
// again at the next timer, after the install (some callers tell before installing; the
// daemon re-arms the timer), counted as restored. An orphan's socket check comes due with
// it, which only moves that check earlier.
// The rules about to be installed leave UDP's source to the guard (nft_rules.cpp): were the
// guard to learn a family's new address only after them (on_table_replaced), that family's
// UDP would leave into the channel with its native source for as long as the install takes
// (~25 ms seen in the lab, 30 datagrams of a stream per change: test_y) — not a leak to the
// native path, but a provider that does not check sources hands the server the client's
// native address in the middle of a handshake.
void RoutedPath::before_channel_addresses(const kernel::RulesetSpec& next) {
  kernel::RulesetSpec first = next;
  // A family that loses its address: the old rules still pass its UDP to the guard until
  // the new ones drop it; the old address it keeps till then is the device's last.
  if (first.tunnel_v4.empty()) first.tunnel_v4 = ctx_.spec.tunnel_v4;
  if (first.tunnel_v6.empty()) first.tunnel_v6 = ctx_.spec.tunnel_v6;
  if (auto synced = sync_channel_source(first); !synced) {
    spdlog::error("channel UDP source rewrite on {}: {}", options_.channel_interface,
                  synced.error().message);
  }
}

void RoutedPath::on_table_replaced() {
  // The channel's UDP source rewrite follows the table: new tunnel addresses, a new device.
  if (auto synced = sync_channel_source(); !synced) {
    spdlog::error("channel UDP source rewrite on {}: {}", options_.channel_interface,
                  synced.error().message);
  }
  const common::Timestamp now = net::monotonic_now();
  std::vector<common::FlowKey> unscheduled;
  for (auto& [key, f] : flows_) {
    f.switching = false;  // its element went with the table: its packets take the channel
    if (!f.scheduled) unscheduled.push_back(key);
    if (!f.rule) continue;
    f.rule = false;
    f.restoring = true;
    set_due(key, f, now);
  }
  for (const auto& key : unscheduled) {
    if (auto it = flows_.find(key); it != flows_.end()) drop(key, it->second);
  }
}

std::vector<kernel::FibRule> RoutedPath::lock_rules() const {
  const kernel::RoutingSpec& r = ctx_.routing_spec;
  std::vector<kernel::FibRule> rules;
  if (r.quic_channel_mark == 0) return rules;
  for (auto family : {common::IpFamily::v4, common::IpFamily::v6}) {
    for (auto port : r.quic_ports) {
      for (bool unreachable : {false, true}) {
        kernel::FibRule rule;
        rule.family = family;
        // With the channel mark's `unreachable` (routing.cpp), before `iif lo ... main`.
        rule.priority = r.flow_priority() + 2;
        rule.table = r.routed_table;
        rule.unreachable = unreachable;
        rule.ip_proto = IPPROTO_UDP;
        rule.dport = port;
        rule.iif = "lo";
        rules.push_back(rule);
      }
    }
  }
  return rules;
}

void RoutedPath::table_missing_fail_closed() {
  if (locked_down_) return;
  const std::vector<kernel::FibRule> rules = lock_rules();
  if (rules.empty()) return;
  kernel::FibRuleWriter writer;
  if (auto opened = writer.open(); !opened) {
    spdlog::error("fail closed: {}", opened.error().message);
    return;
  }
  for (const auto& rule : rules) {
    if (const int err = writer.add(rule); err != 0 && err != EEXIST) {
      spdlog::error("fail closed: a QUIC rule to the channel table: {}", std::strerror(err));
    }
  }
  locked_down_ = true;
  spdlog::warn("routed path: nft table missing: this host's QUIC goes to the channel table by "
               "port until it is back");
}

void RoutedPath::table_back() {
  if (!locked_down_) return;
  kernel::FibRuleWriter writer;
  if (writer.open()) {
    for (const auto& rule : lock_rules()) writer.remove(rule);
  }
  locked_down_ = false;
  spdlog::info("routed path: nft table back, QUIC's fail-closed rules removed");
}

std::vector<OwnedPiece> RoutedPath::owned_pieces() {
  OwnedPiece guard;
  guard.piece = Piece::native_guard;
  guard.present = [this]() -> std::optional<bool> {
    if (!guard_) return std::nullopt;
    for (const auto& dev : guarded_) {
      if (!guard_->attached(dev)) return false;
    }
    if (ctx_.spec.udp_source_by_guard && !guard_->channel_attached(options_.channel_interface)) {
      return false;
    }
    return true;
  };
  guard.restore = [this]() -> common::Outcome {
    std::string why;
    for (const auto& dev : guarded_) {
      if (guard_->attached(dev)) continue;
      if (auto w = guard_->attach(dev); !w) {
        ++stats_.guard_failures;
        if (why.empty()) why = "native guard on " + dev + ": " + w.error().message;
        continue;
      }
      ++stats_.guard_restored;
    }
    if (auto synced = sync_channel_source(); !synced && why.empty()) {
      why = "channel UDP source rewrite: " + synced.error().message;
    }
    if (why.empty()) return {};
    return common::Failure(why);
  };
  return {guard};
}

bool RoutedPath::reload_needs_restart(const kernel::RoutingSpec& now,
                                      const kernel::RoutingSpec& next) const {
  return next.quic_ports != now.quic_ports || next.dns_to_channel != now.dns_to_channel ||
         next.tcp_to_channel != now.tcp_to_channel || next.native_v4 != now.native_v4 ||
         next.native_v6 != now.native_v6 || next.routed_table != now.routed_table;
}

void RoutedPath::add_status(StatusSnapshot& s) const {
  const kernel::GuardCounters g = guard_ ? guard_->counters() : kernel::GuardCounters{};
  s.kernel["native_out"].packets += g[NG_NATIVE_OUT].packets;
  s.kernel["native_out"].bytes += g[NG_NATIVE_OUT].bytes;
  s.kernel["native_in"].packets += g[NG_NATIVE_IN].packets;
  s.kernel["native_in"].bytes += g[NG_NATIVE_IN].bytes;
  if (hold_.is_open()) s.queue_out = hold_.stats();
}

void RoutedPath::add_status_json(nlohmann::json& j) const {
  const RoutedPathStats& r = stats_;
  const kernel::GuardCounters g = guard_ ? guard_->counters() : kernel::GuardCounters{};
  j["routed"] = {{"flows_with_rule", flows_with_rule()},
                 {"flows_watched", flows_watched()},
                 {"rules_added", r.rules_added},
                 {"rules_deleted", r.rules_deleted},
                 {"rule_failures", r.rule_failures},
                 {"watch_failures", r.watch_failures},
                 {"orphans_kept", r.orphans_kept},
                 {"sockets_closed", r.sockets_closed},
                 {"socket_destructions", sockets_.destructions_seen()},
                 {"socket_overflows", sockets_.overflows()},
                 {"socket_lookup_failures", r.socket_lookup_failures},
                 {"devices_guarded", r.devices_guarded},
                 {"guard_failures", r.guard_failures},
                 {"guard_restored", r.guard_restored},
                 {"rules_restored", r.rules_restored},
                 {"lift_datagrams", r.lift_datagrams},
                 {"switch_hold", {{"on", hold_.is_open() && ctx_.spec.switch_hold},
                                  {"flows", std::count_if(flows_.begin(), flows_.end(),
                                                          [](const auto& kv) {
                                                            return kv.second.switching;
                                                          })},
                                  {"flows_added", r.switching_added},
                                  {"failures", r.switching_failures},
                                  {"held_now", hold_.deferred_now()},
                                  {"to_channel", r.held_to_channel}}},
                 {"source_changes", r.source_changes},
                 {"source_failures", r.source_failures},
                 {"native_source", {{"v4", ctx_.routing_spec.source_v4},
                                    {"v6", ctx_.routing_spec.source_v6}}},
                 {"observed_packets", observer_.stats().packets},
                 {"observed_lost", observer_.stats().enobufs},
                 {"guard_drops", {{"long_header", g[NG_DROP_LONG].packets},
                                  {"dns", g[NG_DROP_DNS].packets},
                                  {"tcp", g[NG_DROP_TCP].packets},
                                  {"gso", g[NG_DROP_GSO].packets},
                                  {"unparsed", g[NG_DROP_UNPARSED].packets},
                                  {"raw_fragment", g[NG_DROP_RAW_FRAGMENT].packets}}},
                 {"channel_udp_source", {{"by_guard", ctx_.spec.udp_source_by_guard},
                                         {"packets", g[NG_CHANNEL_UDP].packets},
                                         {"gso", g[NG_CHANNEL_UDP_GSO].packets},
                                         {"unparsed", g[NG_CHANNEL_UNPARSED].packets},
                                         {"foreign_dropped", g[NG_CHANNEL_FOREIGN].packets},
                                         {"restored", r.channel_source_restored},
                                         {"failures", r.channel_source_failures}}}};
}

int RoutedPath::remove_guard(const std::string& pin_dir) {
  return NativeGuard::remove(pin_dir, native_devices(""));
}

}  // namespace quicstep::client::daemon
