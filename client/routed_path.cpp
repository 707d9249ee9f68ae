#include "client/routed_path.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace quicstep::client {
namespace {

constexpr std::uint32_t kMainTable = 254;

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
  const auto sockets = sockets_.sockets_on_port(flow.client_port);
  // Not known: assume it has. A stale rule costs a lookup; a deleted live one sends the
  // flow back through the channel, where the classifier moves it again.
  if (!sockets) return true;
  return std::any_of(sockets->begin(), sockets->end(),
                     [&](const UdpSocketId& s) { return socket_may_carry(s, flow); });
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
    if (it->second.orphan) {
      drop(key, it->second);  // the classifier forgot it already
    } else {
      closed.push_back(key);
    }
  }
  return closed;
}

std::string RoutedPath::start(const RoutedPathOptions& options) {
  options_ = options;
  std::string why;
  guard_ = NativeGuard::load(options_.guard, &why);
  if (!guard_) return "native guard: " + why;
  if (auto w = writer_.open(); !w.empty()) return w;
  if (auto w = sockets_.open(); !w.empty()) return w;
  for (const auto& dev : native_devices(options_.channel_interface)) {
    if (auto w = guard_->attach(dev); !w.empty()) return "native guard on " + dev + ": " + w;
    guarded_.insert(dev);
    ++stats_.devices_guarded;
  }
  return {};
}

void RoutedPath::guard_new_devices() {
  if (!guard_) return;
  for (const auto& dev : native_devices(options_.channel_interface)) {
    if (guarded_.count(dev) != 0) continue;
    if (auto w = guard_->attach(dev); !w.empty()) {
      ++stats_.guard_failures;
      spdlog::error("native guard on new device {}: {}", dev, w);
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
  if (!fresh) return;  // rule added or due already
  flows_by_port_.emplace(flow.client_port, flow);
  f.watch = watch;
  f.due = due < now ? now : due;
  if (f.due <= now) add_rule(flow, f);
}

void RoutedPath::add_rule(const common::FlowKey& key, Flow& f) {
  // The watch entry first: the guard counts from the first native packet.
  if (f.watch && guard_) {
    if (auto why = guard_->watch(guard_key(key)); why.empty()) {
      f.watching = true;
    } else {
      ++stats_.watch_failures;
      spdlog::debug("watch {}:{}: {}", key.server.to_string(), key.client_port, why);
    }
  }
  const int err = writer_.add(flow_rule(key, options_.flow_priority, kMainTable));
  if (err != 0 && err != EEXIST) {
    ++stats_.rule_failures;
    spdlog::warn("rule for {}:{} -> {}:{}: {} (the flow stays on the channel)",
                 key.client.to_string(), key.client_port, key.server.to_string(),
                 key.server_port, std::strerror(err));
    unwatch(key, f);
    f.due = common::Timestamp{std::numeric_limits<std::int64_t>::max()};  // not retried
    return;
  }
  f.rule = true;
  ++stats_.rules_added;
}

void RoutedPath::unwatch(const common::FlowKey& key, Flow& f) {
  if (f.watching && guard_) guard_->unwatch(guard_key(key));
  f.watching = false;
  f.watch = false;
}

void RoutedPath::drop(const common::FlowKey& key, Flow& f) {
  unwatch(key, f);
  if (f.rule) {
    const int err = writer_.remove(flow_rule(key, options_.flow_priority, kMainTable));
    if (err == 0 || err == ENOENT) {
      ++stats_.rules_deleted;
    } else {
      ++stats_.rule_failures;
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
        f.due = now + options_.orphan_check;
        ++stats_.orphans_kept;
      } else {
        drop(e.flow, f);
      }
      break;
  }
}

void RoutedPath::tick(Classifier& classifier, common::Timestamp now) {
  last_tick_ = now;
  std::vector<common::FlowKey> gone;
  for (auto& [key, f] : flows_) {
    if (!f.rule && f.due <= now) add_rule(key, f);
    if (f.orphan && f.due <= now) {
      if (has_socket(key)) {
        f.due = now + options_.orphan_check;
      } else {
        gone.push_back(key);
      }
      continue;
    }
    if (!f.watching || !guard_) continue;
    ng_flow_state st{};
    if (!guard_->watched(guard_key(key), &st)) continue;
    const std::uint64_t total = st.sent;
    const std::uint64_t sent = total - std::min(total, f.sent_seen);
    f.sent_seen = total;
    const common::Timestamp answered{static_cast<std::int64_t>(st.first_answer_ns)};
    classifier.native_report(key, sent, answered, now);
  }
  for (const auto& key : gone) drop(key, flows_.at(key));
}

common::Timestamp RoutedPath::next_tick() const {
  common::Timestamp next{std::numeric_limits<std::int64_t>::max()};
  bool watching = false;
  for (const auto& [key, f] : flows_) {
    if (!f.rule || f.orphan) next = std::min(next, f.due);
    if (f.watching) watching = true;
  }
  // While any flow is watched: every watch_poll.
  if (watching) next = std::min(next, last_tick_ + options_.watch_poll);
  return next;
}

GuardCounters RoutedPath::guard_counters() const {
  return guard_ ? guard_->counters() : GuardCounters{};
}

std::size_t RoutedPath::flows_with_rule() const {
  std::size_t n = 0;
  for (const auto& [key, f] : flows_) n += f.rule ? 1 : 0;
  return n;
}

std::size_t RoutedPath::flows_watched() const {
  std::size_t n = 0;
  for (const auto& [key, f] : flows_) n += f.watching ? 1 : 0;
  return n;
}

void RoutedPath::remove_guard(const std::string& pin_dir) {
  NativeGuard::remove(pin_dir, native_devices(""));
}

}  // namespace quicstep::client
