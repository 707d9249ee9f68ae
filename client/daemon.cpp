#include "client/daemon.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <net/if.h>
#include <unistd.h>

#include <utility>  // boost 1.74 asio/awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <random>
#include <unordered_map>
#include <vector>

#include "client/channel.hpp"
#include "client/classifier.hpp"
#include "client/control_server.hpp"
#include "client/kernel_rules.hpp"
#include "client/link_watch.hpp"
#include "client/nflog_observer.hpp"
#include "client/nfqueue_frontend.hpp"
#include "client/nft_rules.hpp"
#include "client/nft_set_writer.hpp"
#include "client/process.hpp"
#include "client/routed_path.hpp"
#include "client/routing.hpp"
#include "client/status.hpp"
#include "client/watched_ports.hpp"

namespace quicstep::client {
namespace asio = boost::asio;

namespace {

common::Timestamp steady_now() {
  return {std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now().time_since_epoch())
              .count()};
}

}  // namespace

ConfigLoad load_daemon_config(const DaemonOptions& options) {
  const bool absent = ::access(options.config_path.c_str(), F_OK) != 0 && errno == ENOENT;
  ConfigLoad load = options.config_optional && absent ? parse_config("", options.config_path)
                                                      : load_config(options.config_path);
  DaemonSettings& d = load.config.daemon;
  if (!options.channel_interface.empty()) d.channel_interface = options.channel_interface;
  if (!options.wg_config.empty()) d.wg_config = options.wg_config;
  return load;
}

std::string derive_specs(const Config& config, RulesetSpec* r, RoutingSpec* routing) {
  const DaemonSettings& d = config.daemon;
  const Policy& p = config.policy;
  r->quic_ports = p.quic_ports;
  r->dns_to_channel = p.dns_to_channel;
  r->tcp_to_channel = p.tcp_to_channel;
  r->other_udp_to_channel = p.other_udp == Route::channel;
  r->other_protocols_to_channel = p.other_protocols == Route::channel;
  r->mark_mask = d.mark_mask;
  r->mark_channel = d.mark_channel;
  r->mark_native = d.mark_native;
  // The config names two marks; the queue marks are the next values within the mask.
  // (They route to the channel like mark_channel: a packet nobody decided is a channel one.)
  r->mark_decide_out = (d.mark_native + 1) & d.mark_mask;
  r->mark_decide_in = (d.mark_native + 2) & d.mark_mask;
  r->queue_outbound = d.queue_outbound;
  r->queue_inbound = d.queue_inbound;
  r->channel_interface = d.channel_interface;
  r->nat = d.addressing != Addressing::permissive;
  r->stateless = d.addressing == Addressing::stateless;
  r->track_native = tracks_native(d);
  r->gso_native_fast = d.native_gso_in_kernel;
  // Only where the server sees a new address after the switch and the channel's answers
  // arrive addressed to this host (nat's are un-NATed after the hook, so no RTT is seen;
  // permissive keeps the address: nothing to wait for).
  r->observe_handshakes = p.native_switch.enabled && p.watchdog.enabled &&
                          d.addressing == Addressing::stateless;
  r->native_v4 = d.native_prefixes_v4;
  r->native_v6 = d.native_prefixes_v6;
  r->set_size = static_cast<std::uint32_t>(std::min<std::size_t>(p.flows.capacity, 1u << 20));
  r->native_timeout = std::chrono::duration_cast<std::chrono::seconds>(p.flows.idle_timeout);
  // A watched flow may stay pending past max_timeout (quiet at the bound, classifier.hpp):
  // its answers must reach the classifier until it forgets the flow (idle_timeout).
  r->watch_timeout = std::max(
      r->native_timeout,
      std::chrono::seconds(
          1 + std::chrono::duration_cast<std::chrono::seconds>(p.watchdog.max_timeout).count()));
  routing->channel_marks = {r->mark_channel, r->mark_decide_out};
  routing->mark_mask = d.mark_mask;
  routing->table = d.routing_table;
  // The routed native path: no marks, no queue; the channel's copies go to one log group.
  r->routed = routing->routed = d.native_path_routed;
  r->log_group = d.queue_outbound;
  routing->routed_table = d.routed_table;
  routing->quic_ports = p.quic_ports;
  routing->dns_to_channel = p.dns_to_channel;
  routing->tcp_to_channel = p.tcp_to_channel;
  routing->native_v4 = d.native_prefixes_v4;
  routing->native_v6 = d.native_prefixes_v6;
  routing->channel_interface = d.channel_interface;
  if (d.native_path_routed &&
      (p.other_udp == Route::channel || p.other_protocols == Route::channel)) {
    return "native_path = \"routed\" sends only DNS, TCP and QUIC to the channel: set "
           "other_udp and other_protocols to \"native\"";
  }
  if (d.queue_outbound == d.queue_inbound) return "queue_outbound and queue_inbound must differ";
  return check_spec(*r);
}

struct Daemon::Impl {
  Config config;
  DaemonOptions options;
  RulesetSpec spec;
  RoutingSpec routing_spec;
  asio::io_context io;
  asio::signal_set stop_signals{io, SIGTERM, SIGINT};
  asio::signal_set hup{io, SIGHUP};
  asio::steady_timer expiry{io};
  asio::steady_timer channel_watch{io};
  std::unique_ptr<Classifier> classifier;
  // Destroyed in reverse order: queue rules and table first, then routing, then channel.
  Channel channel;
  InstalledRouting routing;
  InstalledRules rules;
  NfqueueFrontend queue_out, queue_in;
  std::unique_ptr<asio::posix::stream_descriptor> out_fd, in_fd;
  std::unique_ptr<ControlServer> control;
  // Native-set elements added recently, so that each flow costs one set update per second
  // at most. Bounded: cleared when full.
  std::unordered_map<common::FlowKey, common::Timestamp, common::FlowKeyHash> recent_native;
  // The client ports in the kernel's watchports set (the watch set's gate).
  WatchedPorts watched_ports;
  // Set changes of one burst, applied together after its verdicts.
  std::vector<SetElementOp> element_ops;
  NftSetWriter set_writer;
  std::uint64_t set_updates = 0, set_update_failures = 0, reloads = 0;
  std::uint64_t channel_recreated = 0;  // the channel device came back with a new index
  // Kernel counters of tables replaced by reloads (a new table starts at zero).
  std::map<std::string, KernelCounter> kernel_base;
  // Stateless addressing has no after-queue chain to count the daemon's native verdicts:
  // counted here and added to the kernel's native_out.
  KernelCounter native_verdicts;
  // The channel device's index: inbound packets queued from it are the server's handshake
  // (observe_handshakes), the others answers on the native path.
  unsigned channel_ifindex = 0;
  common::Timestamp started = steady_now();
  // The routed native path (config.daemon.native_path_routed): copies of the channel's
  // packets instead of the queues, per-flow rules and the guard instead of the flow sets.
  NflogObserver observer;
  std::unique_ptr<asio::posix::stream_descriptor> log_fd;
  // Closed UDP sockets (the routed path's socket watch): their flows end with them.
  std::unique_ptr<asio::posix::stream_descriptor> sockets_fd;
  // Devices appearing or changing (LinkWatch): the channel re-created, a device to guard.
  LinkWatch links;
  std::unique_ptr<asio::posix::stream_descriptor> links_fd;
  std::unique_ptr<RoutedPath> routed;
  asio::steady_timer routed_timer{io};
  // Why native_path = "auto" took the queue path although the config allowed the routed
  // one (it could not start); empty otherwise.
  std::string routed_unavailable;

  Impl(Config c, DaemonOptions o) : config(std::move(c)), options(std::move(o)) {}

  std::string start();
  std::string start_routed();
  void undo_routed();
  void arm_observer();
  void arm_socket_watch();
  void observe(const ObservedPacket& p);
  void after_routed_burst();
  void arm_routed_timer();
  void preload_destinations();
  std::string open_queues();
  void arm_queue(NfqueueFrontend& q, asio::posix::stream_descriptor& fd, bool outbound);
  PacketVerdict decide_out(const QueuedPacket& p);
  Direction inbound_direction(const QueuedPacket& p);
  void after_burst();
  // `flow` is no longer watched: delete its port from the kernel's set if no other uses it.
  void unwatch_port(const common::FlowKey& flow);
  void arm_expiry();
  void watch_channel();
  void arm_link_watch();
  void check_devices();
  void channel_changed(unsigned index);
  void keep_kernel_counters();
  void reload();
  nlohmann::json status();
  std::string control_request(const std::string& request);
};

std::string Daemon::Impl::start() {
  if (auto why = derive_specs(config, &spec, &routing_spec); !why.empty()) return why;
  std::random_device rd;
  classifier = std::make_unique<Classifier>(config.policy,
                                            (std::uint64_t(rd()) << 32) | rd());
  preload_destinations();
  if (auto why = channel.attach(config.daemon, &spec); !why.empty()) return why;
  channel_ifindex = if_nametoindex(config.daemon.channel_interface.c_str());
  if (config.daemon.native_path_routed) {
    if (auto why = start_routed(); !why.empty()) {
      if (config.daemon.native_path != NativePathChoice::automatic) return why;
      // "auto": the queue path carries the same policy (invariant 1 holds on both).
      undo_routed();
      spdlog::warn("routed native path unavailable ({}); taking the queue path", why);
      routed_unavailable = why;
      config.daemon.native_path_routed = false;
      spec.routed = routing_spec.routed = false;
    }
  }
  if (!routed) {
    // Routing first (the table exists before any packet is marked), then the queues (so
    // that marked packets find a listener), then the table, then the queue rules.
    if (auto why = routing.install(routing_spec); !why.empty()) return "ip rule: " + why;
    if (auto why = open_queues(); !why.empty()) return why;
    if (auto why = rules.install(spec); !why.empty()) return "rules: " + why;
    if (auto why = set_writer.open(); !why.empty()) return "flow sets: " + why;
  }
  control = std::make_unique<ControlServer>(
      io, options.control_path, config.daemon.metrics_listen,
      [this](const std::string& req) { return control_request(req); });
  if (auto why = control->start(); !why.empty()) return why;
  if (routed) {
    arm_observer();
    arm_socket_watch();
  } else {
    arm_queue(queue_out, *out_fd, true);
    arm_queue(queue_in, *in_fd, false);
  }
  arm_expiry();
  watch_channel();
  stop_signals.async_wait([this](const boost::system::error_code&, int sig) {
    spdlog::info("signal {}: stopping", sig);
    sd_notify(0, "STOPPING=1");
    io.stop();
  });
  hup.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) reload();
  });
  return {};
}

// The routed native path: the guard on every native device first (nothing may leave there
// unguarded once rules send flows there), then the routing rules (DNS, TCP and QUIC to the
// channel; the flow rules come later), then the log group's listener, then the netdev table
// whose chains copy the channel's QUIC packets to it.
std::string Daemon::Impl::start_routed() {
  routing_spec.exempt_v4 = spec.exempt_v4;
  routing_spec.exempt_v6 = spec.exempt_v6;
  routing_spec.source_v4 = native_source_address("-4");
  routing_spec.source_v6 = native_source_address("-6");
  if (routing_spec.source_v4.empty() && routing_spec.source_v6.empty()) {
    return "native_path = \"routed\": no default route in the main table to take the native "
           "source address from";
  }
  RoutedPathOptions o;
  o.flow_priority = routing_spec.flow_priority();
  o.channel_interface = config.daemon.channel_interface;
  o.guard.pin_dir = config.daemon.guard_pin_dir;
  o.guard.quic_ports = config.policy.quic_ports;
  o.guard.native_prefixes = config.daemon.native_prefixes_v4;
  o.guard.native_prefixes.insert(o.guard.native_prefixes.end(),
                                 config.daemon.native_prefixes_v6.begin(),
                                 config.daemon.native_prefixes_v6.end());
  o.orphan_check = config.policy.flows.idle_timeout;
  routed = std::make_unique<RoutedPath>();
  if (auto why = routed->start(o); !why.empty()) return why;
  if (auto why = routing.install(routing_spec); !why.empty()) return "ip rule: " + why;
  if (auto why = observer.open(spec.log_group); !why.empty()) return why;
  if (auto why = rules.install(spec); !why.empty()) return "rules: " + why;
  log_fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(observer.fd()));
  sockets_fd = std::make_unique<asio::posix::stream_descriptor>(io,
                                                                ::dup(routed->socket_watch_fd()));
  spdlog::info("routed native path: native source {} / {}, flow rules at priority {}",
               routing_spec.source_v4.empty() ? "-" : routing_spec.source_v4,
               routing_spec.source_v6.empty() ? "-" : routing_spec.source_v6,
               routing_spec.flow_priority());
  return {};
}

// Removes what a failed start_routed() installed: the netdev table, the routing rules, the
// guard and its pins, the log group's listener.
void Daemon::Impl::undo_routed() {
  rules.remove();
  routing.remove();
  RoutedPath::remove_guard(config.daemon.guard_pin_dir);
  routed.reset();
  observer.close();
  log_fd.reset();
  sockets_fd.reset();
}

void Daemon::Impl::arm_observer() {
  log_fd->async_wait(asio::posix::stream_descriptor::wait_read,
                     [this](const boost::system::error_code& ec) {
                       if (ec) return;
                       observer.drain([this](const ObservedPacket& p) { observe(p); });
                       after_routed_burst();
                       arm_observer();
                     });
}

void Daemon::Impl::arm_socket_watch() {
  sockets_fd->async_wait(asio::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& ec) {
                           if (ec) return;
                           const common::Timestamp now = steady_now();
                           for (const auto& flow : routed->drain_closed_sockets()) {
                             classifier->forget(flow, now);
                           }
                           after_routed_burst();
                           arm_socket_watch();
                         });
}

void Daemon::Impl::observe(const ObservedPacket& p) {
  const common::Timestamp now = steady_now();
  if (p.outdev == 0) {  // logged on ingress: the server's handshake (the RTT)
    classifier->classify(p.payload, Direction::inbound_channel, now);
    return;
  }
  const Decision d = classifier->classify(p.payload, Direction::outbound, now);
  if (d.path != Path::native) return;
  auto ip = common::parse_ip_packet(p.payload);
  if (!ip.ok()) return;
  const auto key = common::FlowKey::from_client(*ip);
  const FlowEntry* f = classifier->find_flow(key);
  routed->schedule(key, d.not_before, f != nullptr && f->state == FlowState::native_pending, now);
}

void Daemon::Impl::after_routed_burst() {
  std::array<FlowEvent, 64> events;
  const common::Timestamp now = steady_now();
  while (std::size_t n = classifier->drain_events(events)) {
    for (std::size_t i = 0; i < n; ++i) {
      const FlowEvent& e = events[i];
      spdlog::debug("flow {}:{} -> {}:{} {}", e.flow.client.to_string(), e.flow.client_port,
                    e.flow.server.to_string(), e.flow.server_port, to_string(e.kind));
      if (e.kind == FlowEvent::Kind::failed_back) {
        spdlog::warn("migration failed: {}:{} back on the channel", e.flow.server.to_string(),
                     e.flow.server_port);
      }
      routed->on_event(e, now);
    }
  }
  arm_expiry();
}

// The prober's non-migrating destinations: bad lines are reported and skipped (invariant 5).
void Daemon::Impl::preload_destinations() {
  const std::string& path = config.daemon.destinations_file;
  if (path.empty()) return;
  DestinationList list = read_destination_file(path);
  for (const auto& e : list.errors) spdlog::warn("{}:{}: {} (skipped)", path, e.line, e.message);
  if (list.more_errors != 0) spdlog::warn("{}: {} more bad lines", path, list.more_errors);
  const common::Timestamp now = steady_now();
  for (const auto& d : list.destinations) {
    classifier->destinations().add(d, NonMigratingReason::preloaded, now);
  }
  spdlog::info("preloaded {} non-migrating destinations from {}", list.destinations.size(), path);
}

std::string Daemon::Impl::open_queues() {
  NfqueueOptions o;
  o.queue = config.daemon.queue_outbound;
  o.gso = false;  // segments decided one by one (a later segment may be a long header)
  if (auto why = queue_out.open(o); !why.empty()) return why;
  o.queue = config.daemon.queue_inbound;
  o.gso = true;  // only observed: keep GRO packets whole
  if (auto why = queue_in.open(o); !why.empty()) return why;
  out_fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(queue_out.fd()));
  in_fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(queue_in.fd()));
  return {};
}

void Daemon::Impl::arm_queue(NfqueueFrontend& q, asio::posix::stream_descriptor& fd,
                             bool outbound) {
  fd.async_wait(asio::posix::stream_descriptor::wait_read,
                [this, &q, &fd, outbound](const boost::system::error_code& ec) {
                  if (ec) return;
                  if (outbound) {
                    q.drain([this](const QueuedPacket& p) { return decide_out(p); },
                            steady_now());
                  } else {
                    q.drain(
                        [this](const QueuedPacket& p) -> PacketVerdict {
                          classifier->classify(p.payload, inbound_direction(p), steady_now());
                          return {};  // inbound: accept, mark unchanged
                        },
                        steady_now());
                  }
                  after_burst();
                  arm_queue(q, fd, outbound);
                });
}

Direction Daemon::Impl::inbound_direction(const QueuedPacket& p) {
  // A device re-created under the daemon has a new index until watch_channel() notices
  // (2 s): its long headers count as native meanwhile, which only gives an RTT sample (a
  // long header never confirms a migration, classifier.cpp).
  return p.indev == channel_ifindex ? Direction::inbound_channel : Direction::inbound_native;
}

PacketVerdict Daemon::Impl::decide_out(const QueuedPacket& p) {
  const common::Timestamp now = steady_now();
  const Decision d = classifier->classify(p.payload, Direction::outbound, now);
  if (d.path != Path::native) return {};  // pre-set mark: the channel
  if (spec.nat && spec.stateless) {
    ++native_verdicts.packets;
    native_verdicts.bytes += p.payload.size();
  }
  // Keep the kernel's native set in step (one set update per flow and second at most).
  if (auto ip = common::parse_ip_packet(p.payload); ip.ok()) {
    const auto key = common::FlowKey::from_client(*ip);
    // A watched flow stays queued until confirmed: the watchdog counts its packets.
    const FlowEntry* f = classifier->find_flow(key);
    if (f != nullptr && f->state == FlowState::native_pending) {
      return {(p.mark & ~spec.mark_mask) | spec.mark_native, d.not_before};
    }
    auto it = recent_native.find(key);
    if (it == recent_native.end() || now - it->second > std::chrono::seconds(1)) {
      if (recent_native.size() >= 4096) recent_native.clear();
      recent_native[key] = now;
      element_ops.push_back({true, FlowSet::native, key, spec.native_timeout});
    }
  }
  return {(p.mark & ~spec.mark_mask) | spec.mark_native};
}

void Daemon::Impl::after_burst() {
  std::array<FlowEvent, 64> events;
  while (std::size_t n = classifier->drain_events(events)) {
    for (std::size_t i = 0; i < n; ++i) {
      const FlowEvent& e = events[i];
      spdlog::debug("flow {}:{} -> {}:{} {}", e.flow.client.to_string(), e.flow.client_port,
                    e.flow.server.to_string(), e.flow.server_port, to_string(e.kind));
      switch (e.kind) {
        case FlowEvent::Kind::moved_native:
          if (config.policy.watchdog.enabled) {
            // Port and flow in one transaction: no answer passes the port check unseen.
            if (watched_ports.watch(e.flow)) {
              element_ops.push_back({true, FlowSet::watch_port, e.flow, {}});
            }
            element_ops.push_back({true, FlowSet::watch, e.flow, spec.watch_timeout});
          }
          break;
        case FlowEvent::Kind::confirmed:
          element_ops.push_back({false, FlowSet::watch, e.flow, {}});
          unwatch_port(e.flow);
          recent_native[e.flow] = steady_now();
          element_ops.push_back({true, FlowSet::native, e.flow, spec.native_timeout});
          break;
        case FlowEvent::Kind::failed_back:
          spdlog::warn("migration failed: {}:{} back on the channel", e.flow.server.to_string(),
                       e.flow.server_port);
          recent_native.erase(e.flow);
          element_ops.push_back({false, FlowSet::native, e.flow, {}});
          element_ops.push_back({true, FlowSet::channel, e.flow, spec.native_timeout});
          // Its watch element expires by itself; behind the port check it is not reached.
          unwatch_port(e.flow);
          break;
        case FlowEvent::Kind::forgotten:
          recent_native.erase(e.flow);
          unwatch_port(e.flow);
          break;
      }
    }
  }
  if (!element_ops.empty() && rules.installed()) {
    ++set_updates;
    std::string why;
    const int failed = set_writer.apply(spec.table, element_ops, &why);
    if (failed != 0) {
      set_update_failures += static_cast<std::uint64_t>(failed);
      spdlog::debug("{} flow-set change(s) failed, first: {}", failed, why);
    }
  }
  element_ops.clear();
  arm_expiry();
}

void Daemon::Impl::unwatch_port(const common::FlowKey& flow) {
  if (watched_ports.unwatch(flow)) element_ops.push_back({false, FlowSet::watch_port, flow, {}});
}

void Daemon::Impl::arm_expiry() {
  common::Timestamp next = std::min(classifier->next_expiry(), queue_out.next_release());
  if (routed) next = std::min(next, routed->next_tick());
  if (next.ns == std::numeric_limits<std::int64_t>::max()) {
    expiry.expires_after(std::chrono::seconds(60));
  } else {
    expiry.expires_after(std::max(next - steady_now(), common::Duration::zero()));
  }
  expiry.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or stopped
    const common::Timestamp now = steady_now();
    if (routed) {
      // The watched flows' counts before the watchdog judges them at its deadlines.
      routed->tick(*classifier, now);
      classifier->on_expiry(now);
      after_routed_burst();
      return;
    }
    queue_out.release_due(now);
    classifier->on_expiry(now);
    after_burst();
  });
}

// The counters of the table about to be replaced (a new table starts at zero).
void Daemon::Impl::keep_kernel_counters() {
  for (const auto& [name, k] : read_kernel_counters(spec.table)) {
    kernel_base[name].packets += k.packets;
    kernel_base[name].bytes += k.bytes;
  }
}

// The netdev chains (stateless addressing) are bound to the channel device and vanish with
// it. If another tool re-creates the device under the daemon, channel packets would leave
// with the native source address and the provider would drop them (traffic stops; nothing
// leaks: the ip rules still send them only to the channel). Checked every 2 s: a new
// device gets the ruleset again, with its endpoints and tunnel addresses read anew.
// The devices: when the kernel announces a change (LinkWatch), and every 2 s in case an
// announcement was missed.
void Daemon::Impl::watch_channel() {
  if (!links_fd && links.open().empty()) {
    links_fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(links.fd()));
    arm_link_watch();
  }
  channel_watch.expires_after(std::chrono::seconds(2));
  channel_watch.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    check_devices();
    watch_channel();
  });
}

void Daemon::Impl::arm_link_watch() {
  links_fd->async_wait(asio::posix::stream_descriptor::wait_read,
                       [this](const boost::system::error_code& ec) {
                         if (ec) return;
                         if (links.drain()) check_devices();
                         arm_link_watch();
                       });
}

void Daemon::Impl::check_devices() {
  const unsigned index = if_nametoindex(config.daemon.channel_interface.c_str());
  if (index != channel_ifindex) channel_changed(index);
  if (routed) routed->guard_new_devices();
}

void Daemon::Impl::channel_changed(unsigned index) {
  if (index == 0) {
    if (channel_ifindex != 0) {
      spdlog::warn("channel interface {} is gone: channel packets have no route (fail "
                   "closed) until it returns", config.daemon.channel_interface);
    }
    channel_ifindex = 0;
    return;
  }
  RulesetSpec new_spec = spec;
  if (auto why = channel.reattach(&new_spec); !why.empty()) {
    spdlog::error("channel interface {} re-created, but: {}; retrying",
                  config.daemon.channel_interface, why);
    return;  // channel_ifindex unchanged: the next check tries again
  }
  keep_kernel_counters();
  if (auto why = rules.install(new_spec); !why.empty()) {
    spdlog::error("channel interface {} re-created, but the rules failed: {}; retrying",
                  config.daemon.channel_interface, why);
    return;
  }
  if (routed) {
    // The routed channel table's route went with the old device: the same route again.
    for (const auto& cmd : routed_routing_commands(routing_spec)) {
      if (cmd.size() > 2 && cmd[2] == "route") {
        if (auto r = run_process(cmd); !r.ok()) spdlog::error("{}", describe(cmd, r));
      }
    }
  }
  watched_ports.clear();  // the new table's sets are empty
  spec = new_spec;
  recent_native.clear();
  channel_ifindex = index;
  ++channel_recreated;
  spdlog::warn("channel interface {} re-created (index {}): rules installed again",
               config.daemon.channel_interface, index);
}

void Daemon::Impl::reload() {
  ++reloads;
  hup.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) reload();
  });
  ConfigLoad load = load_daemon_config(options);
  if (!load.ok()) {
    for (const auto& e : load.errors) spdlog::error("reload refused: {}", e.to_string());
    return;
  }
  // "auto" that fell back at start stays on the queue path (a restart tries routed again).
  if (!routed_unavailable.empty() &&
      load.config.daemon.native_path == NativePathChoice::automatic) {
    load.config.daemon.native_path_routed = false;
  }
  RulesetSpec new_spec;
  RoutingSpec new_routing;
  if (auto why = derive_specs(load.config, &new_spec, &new_routing); !why.empty()) {
    spdlog::error("reload refused: {}", why);
    return;
  }
  if (load.config.daemon.queue_outbound != config.daemon.queue_outbound ||
      load.config.daemon.queue_inbound != config.daemon.queue_inbound ||
      load.config.daemon.channel_interface != config.daemon.channel_interface ||
      load.config.daemon.routing_table != config.daemon.routing_table ||
      load.config.daemon.native_path_routed != config.daemon.native_path_routed ||
      (routed && (new_routing.quic_ports != routing_spec.quic_ports ||
                  new_routing.dns_to_channel != routing_spec.dns_to_channel ||
                  new_routing.tcp_to_channel != routing_spec.tcp_to_channel ||
                  new_routing.native_v4 != routing_spec.native_v4 ||
                  new_routing.native_v6 != routing_spec.native_v6 ||
                  new_routing.routed_table != routing_spec.routed_table))) {
    spdlog::error("reload refused: queues, channel, routing tables, the native path and (routed) "
                  "its ports, DNS/TCP policy and native prefixes need a restart");
    return;
  }
  new_spec.exempt_v4 = spec.exempt_v4;
  new_spec.exempt_v6 = spec.exempt_v6;
  new_spec.tunnel_v4 = spec.tunnel_v4;
  new_spec.tunnel_v6 = spec.tunnel_v6;
  if (new_spec.stateless && new_spec.tunnel_v4.empty() && new_spec.tunnel_v6.empty()) {
    spdlog::error("reload refused: stateless addressing needs an address on {}",
                  new_spec.channel_interface);
    return;
  }
  // The same ruleset: the table stays, with its flow sets and counters. A different one
  // replaces it atomically; its sets start empty, so native flows pass the queue once more
  // (the daemon re-adds them) and pinned or watched flows are queued until they end.
  const bool new_rules = ruleset_text(new_spec) != ruleset_text(spec);
  if (new_rules) {
    keep_kernel_counters();
    watched_ports.clear();  // either table below starts with empty sets
    if (auto why = rules.install(new_spec); !why.empty()) {
      spdlog::error("reload: {}; keeping the old rules", why);
      rules.install(spec);
      return;
    }
    recent_native.clear();
  }
  config = std::move(load.config);
  spec = new_spec;
  // Keep every flow, its timers and the non-migrating cache unless a table's shape changed.
  if (!classifier->update_policy(config.policy)) {
    spdlog::warn("reload: flow table or cache sizes/timeouts changed; flow state reset");
    std::random_device rd;
    classifier = std::make_unique<Classifier>(config.policy, (std::uint64_t(rd()) << 32) | rd());
    // Their ports leave the kernel's set with the next burst's flow-set changes.
    for (const auto& f : watched_ports.release_all()) {
      element_ops.push_back({false, FlowSet::watch_port, f, {}});
    }
    recent_native.clear();
  }
  preload_destinations();
  spdlog::info("reloaded {} ({})", options.config_path,
               new_rules ? "kernel rules replaced" : "kernel rules unchanged");
  sd_notify(0, "STATUS=reloaded");
}

nlohmann::json Daemon::Impl::status() {
  StatusSnapshot s;
  s.classifier = classifier.get();
  s.kernel = read_kernel_counters(spec.table);
  for (const auto& [name, k] : kernel_base) {
    s.kernel[name].packets += k.packets;
    s.kernel[name].bytes += k.bytes;
  }
  s.kernel["native_out"].packets += native_verdicts.packets;
  s.kernel["native_out"].bytes += native_verdicts.bytes;
  if (routed) {  // the guard counts the native path
    const GuardCounters g = routed->guard_counters();
    s.kernel["native_out"].packets += g[NG_NATIVE_OUT].packets;
    s.kernel["native_out"].bytes += g[NG_NATIVE_OUT].bytes;
    s.kernel["native_in"].packets += g[NG_NATIVE_IN].packets;
    s.kernel["native_in"].bytes += g[NG_NATIVE_IN].bytes;
  }
  s.queue_out = queue_out.stats();
  s.queue_in = queue_in.stats();
  s.channel_interface = spec.channel_interface;
  s.addressing = std::string(to_string(config.daemon.addressing));
  s.uptime_s = std::chrono::duration<double>(steady_now() - started).count();
  s.set_updates = set_updates;
  s.set_update_failures = set_update_failures;
  s.reloads = reloads;
  s.channel_recreated = channel_recreated;
  nlohmann::json j = status_json(s);
  j["native_path"] = routed ? "routed" : "queue";
  if (!routed_unavailable.empty()) j["routed_unavailable"] = routed_unavailable;
  if (routed) {
    const RoutedPathStats& r = routed->stats();
    const GuardCounters g = routed->guard_counters();
    j["routed"] = {{"flows_with_rule", routed->flows_with_rule()},
                   {"flows_watched", routed->flows_watched()},
                   {"rules_added", r.rules_added},
                   {"rules_deleted", r.rules_deleted},
                   {"rule_failures", r.rule_failures},
                   {"watch_failures", r.watch_failures},
                   {"orphans_kept", r.orphans_kept},
                   {"sockets_closed", r.sockets_closed},
                   {"devices_guarded", r.devices_guarded},
                   {"guard_failures", r.guard_failures},
                   {"observed_packets", observer.stats().packets},
                   {"observed_lost", observer.stats().enobufs},
                   {"guard_drops", {{"long_header", g[NG_DROP_LONG].packets},
                                    {"dns", g[NG_DROP_DNS].packets},
                                    {"tcp", g[NG_DROP_TCP].packets},
                                    {"gso", g[NG_DROP_GSO].packets},
                                    {"unparsed", g[NG_DROP_UNPARSED].packets},
                                    {"raw_fragment", g[NG_DROP_RAW_FRAGMENT].packets}}}};
  }
  return j;
}

std::string Daemon::Impl::control_request(const std::string& request) {
  if (request == "status") return status().dump() + "\n";
  if (request == "flows") return flows_json(*classifier, 1000).dump() + "\n";
  if (request == "metrics") return metrics_text(status());
  return R"({"error":"unknown request; try status, flows"})" "\n";
}

Daemon::Daemon(Config config, DaemonOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options))) {}
Daemon::~Daemon() = default;

std::string Daemon::start() {
  std::string why = impl_->start();
  if (!why.empty()) {
    // Undo in reverse order, now, before the caller reports the error.
    impl_->rules.remove();
    impl_->routing.remove();
    if (impl_->routed) RoutedPath::remove_guard(impl_->config.daemon.guard_pin_dir);
  }
  return why;
}

int Daemon::run() {
  sd_notify(0, "READY=1\nSTATUS=deciding");
  spdlog::info("quicstepd running: channel {} ({}), queues {}/{}", impl_->spec.channel_interface,
               to_string(impl_->config.daemon.addressing), impl_->spec.queue_outbound,
               impl_->spec.queue_inbound);
  impl_->io.run();
  impl_->rules.remove();
  impl_->routing.remove();
  if (impl_->routed) RoutedPath::remove_guard(impl_->config.daemon.guard_pin_dir);
  spdlog::info("rules and routes removed");
  return 0;
}

std::string cleanup_everything(const Config& config) {
  RulesetSpec spec;
  RoutingSpec routing;
  derive_specs(config, &spec, &routing);
  std::string why = remove_kernel_rules(spec.table);
  remove_routing(routing);
  RoutedPath::remove_guard(config.daemon.guard_pin_dir);
  Channel::cleanup(config.daemon);
  return why;
}

}  // namespace quicstep::client
