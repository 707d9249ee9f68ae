#include "client/daemon/queue_path.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "client/kernel/fib_rule_writer.hpp"
#include "common/ip_packet.hpp"
#include "net/clock.hpp"
#include "net/process.hpp"

namespace quicstep::client::daemon {

using core::Decision;
using core::Direction;
using core::FlowEntry;
using core::FlowEvent;
using core::FlowState;
using core::Path;
using kernel::FlowSet;

common::Outcome QueuePath::start() {
  if (auto why = ctx_.routing.install(ctx_.routing_spec); !why) {
    return common::Failure("ip rule: " + why.error().message);
  }
  net::NfqueueOptions o;
  o.queue = ctx_.config.daemon.queue_outbound;
  o.gso = false;  // segments decided one by one (a later segment may be a long header)
  if (auto why = queue_out_.open(o); !why) return why;
  o.queue = ctx_.config.daemon.queue_inbound;
  o.gso = true;  // only observed: keep GRO packets whole
  if (auto why = queue_in_.open(o); !why) return why;
  if (auto why = ctx_.rules.install(ctx_.spec); !why) {
    return common::Failure("rules: " + why.error().message);
  }
  if (auto why = set_writer_.open(); !why) {
    return common::Failure("flow sets: " + why.error().message);
  }
  return {};
}

std::vector<EventSource> QueuePath::sources() {
  return {
      {queue_out_.fd(),
       [this] {
         queue_out_.drain([this](const net::QueuedPacket& p) { return decide_out(p); },
                          net::monotonic_now());
       }},
      {queue_in_.fd(),
       [this] {
         queue_in_.drain(
             [this](const net::QueuedPacket& p) -> net::PacketVerdict {
               ctx_.classifier->classify(p.payload, inbound_direction(p), net::monotonic_now());
               return {};  // inbound: accept, mark unchanged
             },
             net::monotonic_now());
       }},
  };
}

Direction QueuePath::inbound_direction(const net::QueuedPacket& p) const {
  // A device re-created under the daemon has a new index until the daemon notices (at most
  // 2 s): its long headers count as native meanwhile, which only gives an RTT sample (a long
  // header never confirms a migration, classifier.cpp).
  return p.indev == ctx_.channel_ifindex ? Direction::inbound_channel
                                         : Direction::inbound_native;
}

net::PacketVerdict QueuePath::decide_out(const net::QueuedPacket& p) {
  const kernel::RulesetSpec& spec = ctx_.spec;
  const common::Timestamp now = net::monotonic_now();
  const Decision d = ctx_.classifier->classify(p.payload, Direction::outbound, now);
  if (d.path != Path::native) return {};  // pre-set mark: the channel
  if (spec.nat && spec.stateless) {
    ++native_verdicts_.packets;
    native_verdicts_.bytes += p.payload.size();
  }
  // Keep the kernel's native set in step (one set update per flow and second at most).
  if (auto ip = common::parse_ip_packet(p.payload); ip.ok()) {
    const auto key = common::FlowKey::from_client(*ip);
    // A watched flow stays queued until confirmed: the watchdog counts its packets.
    const FlowEntry* f = ctx_.classifier->find_flow(key);
    if (f != nullptr && f->state == FlowState::native_pending) {
      return {(p.mark & ~spec.mark_mask) | spec.mark_native, d.not_before};
    }
    auto it = recent_native_.find(key);
    if (it == recent_native_.end() || now - it->second > std::chrono::seconds(1)) {
      if (recent_native_.size() >= 4096) recent_native_.clear();
      recent_native_[key] = now;
      element_ops_.push_back({true, FlowSet::native, key, spec.native_timeout});
    }
  }
  return {(p.mark & ~spec.mark_mask) | spec.mark_native};
}

void QueuePath::on_event(const FlowEvent& e, common::Timestamp now) {
  const kernel::RulesetSpec& spec = ctx_.spec;
  switch (e.kind) {
    case FlowEvent::Kind::moved_native:
      if (ctx_.config.policy.watchdog.enabled) {
        // Port and flow in one transaction: no answer passes the port check unseen.
        if (watched_ports_.watch(e.flow)) {
          element_ops_.push_back({true, FlowSet::watch_port, e.flow, {}});
        }
        element_ops_.push_back({true, FlowSet::watch, e.flow, spec.watch_timeout});
      }
      break;
    case FlowEvent::Kind::confirmed:
      element_ops_.push_back({false, FlowSet::watch, e.flow, {}});
      unwatch_port(e.flow);
      recent_native_[e.flow] = now;
      element_ops_.push_back({true, FlowSet::native, e.flow, spec.native_timeout});
      break;
    case FlowEvent::Kind::failed_back:
      recent_native_.erase(e.flow);
      element_ops_.push_back({false, FlowSet::native, e.flow, {}});
      element_ops_.push_back({true, FlowSet::channel, e.flow, spec.native_timeout});
      // Its watch element expires by itself; behind the port check it is not reached.
      unwatch_port(e.flow);
      break;
    case FlowEvent::Kind::forgotten:
      recent_native_.erase(e.flow);
      unwatch_port(e.flow);
      break;
  }
}

void QueuePath::after_events() {
  if (!element_ops_.empty() && ctx_.rules.installed()) {
    ++set_updates_;
    if (auto applied = set_writer_.apply(ctx_.spec.table, element_ops_); !applied) {
      const kernel::NftSetWriter::Failures& failed = applied.error();
      set_update_failures_ += static_cast<std::uint64_t>(failed.count);
      spdlog::debug("{} flow-set change(s) failed, first: {}", failed.count, failed.first);
    }
  }
  element_ops_.clear();
}

void QueuePath::unwatch_port(const common::FlowKey& flow) {
  if (watched_ports_.unwatch(flow)) element_ops_.push_back({false, FlowSet::watch_port, flow, {}});
}

void QueuePath::on_table_replaced() {
  watched_ports_.clear();  // the new table's sets are empty
  recent_native_.clear();
}

void QueuePath::on_classifier_reset() {
  // Their ports leave the kernel's set with the next burst's flow-set changes.
  for (const auto& f : watched_ports_.release_all()) {
    element_ops_.push_back({false, FlowSet::watch_port, f, {}});
  }
  recent_native_.clear();
}

void QueuePath::table_missing_fail_closed() {
  if (locked_down_) return;
  kernel::RoutingSpec lock = ctx_.routing_spec;
  lock.routed = true;
  lock.quic_channel_mark = 0;  // QUIC by port: no nft table marks it
  lock.source_v4.clear();  // no route in the routed table: its lookups fall to `unreachable`
  lock.source_v6.clear();
  lock.exempt_v4 = ctx_.spec.exempt_v4;  // the channel's own packets still leave
  lock.exempt_v6 = ctx_.spec.exempt_v6;
  kernel::FibRuleWriter writer;
  const bool netlink = static_cast<bool>(writer.open());
  for (const auto& cmd : kernel::routed_routing_commands(lock)) {
    if (cmd.size() <= 2 || cmd[2] != "rule") continue;
    if (auto rule = kernel::parse_rule_command(cmd); rule && netlink) {
      if (const int err = writer.add(*rule); err != 0 && err != EEXIST) {
        spdlog::error("fail closed: {}: {}", net::describe(cmd, {}), std::strerror(err));
      }
      continue;
    }
    if (auto r = net::run_process(cmd); !r.ok() && r.output.find("File exists") == std::string::npos) {
      spdlog::error("fail closed: {}", net::describe(cmd, r));
    }
  }
  locked_down_ = true;
  spdlog::warn("queue path without its nft table: DNS, TCP and QUIC are unreachable until it "
               "is back (fail closed)");
}

void QueuePath::table_back() {
  if (!locked_down_) return;
  kernel::FibRuleWriter writer;
  if (writer.open()) {
    const kernel::RoutingSpec& r = ctx_.routing_spec;
    for (auto family : {common::IpFamily::v4, common::IpFamily::v6}) {
      for (std::uint32_t p = r.flow_priority() + 1; p < r.flow_priority() + r.kRoutedPriorities;
           ++p) {
        writer.remove_all_at(family, p);
      }
    }
  }
  locked_down_ = false;
  spdlog::info("queue path: nft table back, fail-closed rules removed");
}

void QueuePath::add_status(StatusSnapshot& s) const {
  s.kernel["native_out"].packets += native_verdicts_.packets;
  s.kernel["native_out"].bytes += native_verdicts_.bytes;
  s.queue_out = queue_out_.stats();
  s.queue_in = queue_in_.stats();
  s.set_updates = set_updates_;
  s.set_update_failures = set_update_failures_;
}

}  // namespace quicstep::client::daemon
