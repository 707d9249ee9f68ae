#include "client/daemon/daemon.hpp"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <utility>  // boost 1.74 asio/awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <linux/netfilter.h>  // after netinet/in.h (Asio): NFPROTO_*
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "client/core/classifier.hpp"
#include "client/daemon/channel.hpp"
#include "client/core/channel_health.hpp"
#include "client/daemon/control_server.hpp"
#include "client/kernel/healer.hpp"
#include "client/daemon/native_path.hpp"
#include "client/daemon/queue_path.hpp"
#include "client/daemon/routed_path.hpp"
#include "client/daemon/specs.hpp"
#include "client/daemon/status.hpp"
#include "client/daemon/syscall_filter.hpp"
#include "client/daemon/wireguard_reading.hpp"
#include "client/kernel/forwarding.hpp"
#include "client/kernel/kernel_probe.hpp"
#include "client/kernel/kernel_rules.hpp"
#include "client/kernel/link_watch.hpp"
#include "client/kernel/reverse_path_filter.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/routing.hpp"
#include "client/kernel/state_watch.hpp"
#include "net/clock.hpp"

namespace quicstep::client::daemon {

using core::Classifier;
using core::Config;
using core::ConfigLoad;
using core::DestinationList;
using core::FlowEvent;
using core::NativePathChoice;
using core::NonMigratingReason;
using core::load_config;
using core::read_destination_file;
using kernel::InstalledRouting;
using kernel::InstalledRules;
using kernel::KernelCounter;
using kernel::LinkWatch;
using kernel::RoutingSpec;
using kernel::RulesetSpec;
using kernel::read_kernel_counters;
using kernel::remove_kernel_rules;
using kernel::remove_routing;
using kernel::ruleset_text;
namespace asio = boost::asio;

ConfigLoad load_daemon_config(const DaemonOptions& options) {
  const bool absent = ::access(options.config_path.c_str(), F_OK) != 0 && errno == ENOENT;
  ConfigLoad load = options.config_optional && absent ? core::parse_config("", options.config_path)
                                                      : load_config(options.config_path);
  core::DaemonSettings& d = load.config.daemon;
  if (load.ok() && d.channel_kind == core::ChannelKind::tproxy &&
      (!options.channel_interface.empty() || !options.wg_config.empty())) {
    load.errors.push_back({options.config_path, 0, 0,
                           "--channel-interface and --wg-config name a channel device, but "
                           "channel_kind = \"tproxy\" hands channel packets to a local port"});
    return load;
  }
  if (!options.channel_interface.empty()) d.channel_interface = options.channel_interface;
  if (!options.wg_config.empty()) d.wg_config = options.wg_config;
  if (load.ok() && d.channel_kind == core::ChannelKind::interface && !options.wg_config.empty()) {
    load.errors.push_back({options.config_path, 0, 0,
                           "--wg-config brings up a WireGuard channel, but channel_kind = "
                           "\"interface\" routes into an interface another program brings up"});
  }
  return load;
}

struct Daemon::Impl {
  Config config;
  // The system-call filter's state for the status: off, on (with its count), or failed.
  nlohmann::json syscall_filter = {{"state", "off"}};
  DaemonOptions options;
  RulesetSpec spec;
  RoutingSpec routing_spec;
  asio::io_context io;
  asio::signal_set stop_signals{io, SIGTERM, SIGINT};
  asio::signal_set hup{io, SIGHUP};
  asio::steady_timer expiry{io};
  asio::steady_timer channel_watch{io};
  std::unique_ptr<Classifier> classifier;
  // Destroyed in reverse order: the native path's listeners (a queue without a listener
  // leaves its packets on the channel), then the nft table, then routing, then the channel.
  Channel channel;
  InstalledRouting routing;
  InstalledRules rules;
  // The channel device's index: inbound packets from it are the server's handshake
  // (observe_handshakes), the others answers on the native path.
  unsigned channel_ifindex = 0;
  std::unique_ptr<NativePath> path;  // chosen once, by start_native_path()
  // What the loop waits on for the native path: its sources and their descriptors.
  struct Watched {
    EventSource source;
    std::unique_ptr<asio::posix::stream_descriptor> fd;
  };
  std::vector<Watched> watched;
  std::unique_ptr<ControlServer> control;
  std::uint64_t reloads = 0;
  std::uint64_t channel_recreated = 0;  // the channel device came back with a new index
  std::uint64_t channel_readdressed = 0;  // its tunnel addresses changed under the daemon
  std::string readdress_error;  // why following them failed, logged once per change
  std::string forwarding_error;  // the last failure of check_forwarding, logged once
  // Kernel counters of tables replaced by reloads (a new table starts at zero).
  std::map<std::string, KernelCounter> kernel_base;
  common::Timestamp started = net::monotonic_now();
  // Devices appearing or changing (LinkWatch): the channel re-created, a device to guard.
  LinkWatch links;
  std::unique_ptr<asio::posix::stream_descriptor> links_fd;
  // Why native_path = "auto" took the queue path although the config allowed the routed
  // one (it could not start); empty otherwise.
  std::string routed_unavailable;
  // Self-healing (healer.hpp): the pieces of kernel state the daemon owns, checked when the
  // kernel announces a change (StateWatch) and every heal_interval.
  Healer healer;
  kernel::KernelProbe probe;
  kernel::StateWatch state_watch;
  std::unique_ptr<asio::posix::stream_descriptor> state_route_fd, state_nft_fd;
  asio::steady_timer heal_timer{io};
  bool heal_posted = false;
  static constexpr std::chrono::milliseconds heal_interval{500};
  // The channel device's state: down (or gone) means channel packets fail closed.
  bool channel_up = true;
  std::uint64_t channel_downs = 0;
  common::Timestamp channel_down_since;
  std::string notified_status;
  // The channel's health (channel_health.hpp), from WireGuard's own state every second.
  core::ChannelHealthJudge channel_health;
  asio::steady_timer health_timer{io};
  std::string health_read_error;  // the last reading's failure, logged once per change
  // The native source address per family at the last check (nullopt: not read yet).
  std::optional<std::string> native_source_v4, native_source_v6;
  std::uint64_t channel_rebinds = 0;
  // Strict IPv4 rp_filter loosened on every device but lo (reverse_path_filter.hpp): at
  // start, on new devices and every 2 s (another tool may set it back); put back at exit.
  kernel::ReversePathFilter rp_filter;

  Impl(Config c, DaemonOptions o) : config(std::move(c)), options(std::move(o)) {}

  NativePathContext context() {
    return {config, spec, routing_spec, routing, rules, classifier, channel_ifindex};
  }
  common::Outcome start();
  common::Outcome start_native_path();
  bool reload_changes_native_path(Config& reloaded) const;
  void remove_installed();
  void loosen_rp_filter();
  void check_forwarding();
  void watch_source(std::size_t index);
  void drain_events();
  void preload_destinations();
  void arm_expiry();
  void watch_channel();
  void arm_link_watch();
  void check_devices();
  void channel_changed(unsigned index);
  void follow_channel_addresses();
  void keep_kernel_counters();
  void setup_healing();
  void arm_heal_timer();
  void arm_state_watch(asio::posix::stream_descriptor& fd, bool nft);
  void post_heal();
  void heal_now();
  void update_channel_link();
  void arm_health_timer();
  bool native_source_changed(const NativeSources& sources);
  void rebind_channel();
  void judge_channel();
  bool tproxy() const { return config.daemon.channel_kind == core::ChannelKind::tproxy; }
  void notify_status();
  void reload();
  nlohmann::json status();
  std::string control_request(const std::string& request);
};

common::Outcome Daemon::Impl::start() {
  if (auto why = derive_specs(config, &spec, &routing_spec); !why) return why;
  std::random_device rd;
  classifier = std::make_unique<Classifier>(config.policy,
                                            (std::uint64_t(rd()) << 32) | rd());
  preload_destinations();
  if (auto why = channel.attach(config.daemon, &spec); !why) return why;
  channel_ifindex = if_nametoindex(config.daemon.channel_interface.c_str());
  loosen_rp_filter();
  if (auto why = start_native_path(); !why) return why;
  if (tproxy()) {
    update_channel_link();
    if (!channel_up) {
      spdlog::warn("{} is not listening yet: DNS, TCP and QUIC handshakes fail closed until it "
                   "is (start it: ss-redir -u, a tproxy inbound)", channel.describe());
    }
  }
  control = std::make_unique<ControlServer>(
      io, options.control_path, config.daemon.metrics_listen,
      [this](const std::string& req) { return control_request(req); });
  if (auto why = control->start(); !why) return why;
  for (auto& source : path->sources()) {
    auto fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(source.fd));
    watched.push_back({std::move(source), std::move(fd)});
  }
  for (std::size_t i = 0; i < watched.size(); ++i) watch_source(i);
  arm_expiry();
  watch_channel();
  setup_healing();
  judge_channel();
  arm_health_timer();
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

// The one place that chooses the native path (as wireguard-tools' ipc.c chooses its
// backend): the routed path where the config asks for it (native_path = "routed", or "auto"
// where the config allows it, derive_specs), else the queue path. "auto" falls back to the
// queue path where routed cannot start: what it installed is removed first, and the reason is
// logged and reported (status routed_unavailable). The queue path carries the same policy:
// invariant 1 holds on both.
common::Outcome Daemon::Impl::start_native_path() {
  if (config.daemon.native_path_routed) {
    path = std::make_unique<RoutedPath>(context());
    common::Outcome started = path->start();
    if (started) return started;
    // (A tproxy channel has no queue path to fall back to.)
    if (config.daemon.native_path != NativePathChoice::automatic || tproxy()) return started;
    remove_installed();
    const std::string& why = started.error().message;
    spdlog::warn("routed native path unavailable ({}); taking the queue path", why);
    routed_unavailable = why;
    config.daemon.native_path_routed = false;
    spec.routed = routing_spec.routed = false;
    routing_spec.quic_channel_mark = 0;
    spec.udp_source_by_guard = false;  // the guard went with the routed path
  }
  path = std::make_unique<QueuePath>(context());
  common::Outcome started = path->start();
  // A routed daemon that was killed left its guard pinned (invariant 1); the queue path's
  // rules keep channel packets off the native path from here on. Its channel program would
  // go on rewriting or dropping channel packets by the tunnel addresses it last knew (wrong
  // for permissive addressing, or after the addresses changed): taken off.
  if (started) {
    if (const int removed = RoutedPath::remove_guard(config.daemon.guard_pin_dir); removed > 0) {
      spdlog::warn("removed the guard an earlier routed daemon left ({} attachments)", removed);
    }
  }
  return started;
}

// The choice again, for a reloaded config: "auto" that fell back at start stays on the queue
// path (a restart tries routed again). Returns whether `reloaded` asks for the other native
// path, which needs a restart.
bool Daemon::Impl::reload_changes_native_path(Config& reloaded) const {
  if (!routed_unavailable.empty() &&
      reloaded.daemon.native_path == NativePathChoice::automatic) {
    reloaded.daemon.native_path_routed = false;
  }
  return reloaded.daemon.native_path_routed != config.daemon.native_path_routed;
}

// The nft table, the routing rules and what the native path added (the guard's pins).
void Daemon::Impl::remove_installed() {
  rules.remove();
  routing.remove();
  if (path) path->stop();
}

void Daemon::Impl::loosen_rp_filter() {
  struct if_nameindex* list = ::if_nameindex();
  if (list == nullptr) return;
  for (const struct if_nameindex* i = list; i->if_index != 0; ++i) {
    const std::string name = i->if_name;
    if (name != "lo" && rp_filter.loosen(name)) {
      spdlog::info("{}: strict IPv4 rp_filter loosened to 2 (it would drop moved flows' "
                   "native answers)", name);
    }
  }
  if_freenameindex(list);
}

void Daemon::Impl::watch_source(std::size_t index) {
  watched[index].fd->async_wait(asio::posix::stream_descriptor::wait_read,
                                [this, index](const boost::system::error_code& ec) {
                                  if (ec) return;
                                  watched[index].source.on_readable();
                                  drain_events();
                                  watch_source(index);
                                });
}

// The classifier's events after a burst or a timer: logged, then handed to the native path,
// which keeps the kernel in step; then the next expiry.
void Daemon::Impl::drain_events() {
  std::array<FlowEvent, 64> events;
  const common::Timestamp now = net::monotonic_now();
  while (std::size_t n = classifier->drain_events(events)) {
    for (std::size_t i = 0; i < n; ++i) {
      const FlowEvent& e = events[i];
      spdlog::debug("flow {}:{} -> {}:{} {}", e.flow.client.to_string(), e.flow.client_port,
                    e.flow.server.to_string(), e.flow.server_port, to_string(e.kind));
      if (e.kind == FlowEvent::Kind::failed_back) {
        spdlog::warn("migration failed: {}:{} back on the channel", e.flow.server.to_string(),
                     e.flow.server_port);
      }
      path->on_event(e, now);
    }
  }
  path->after_events();
  arm_expiry();
}

// The prober's non-migrating destinations: bad lines are reported and skipped (invariant 5).
void Daemon::Impl::preload_destinations() {
  const std::string& path = config.daemon.destinations_file;
  if (path.empty()) return;
  DestinationList list = read_destination_file(path);
  for (const auto& e : list.errors) spdlog::warn("{}:{}: {} (skipped)", path, e.line, e.message);
  if (list.more_errors != 0) spdlog::warn("{}: {} more bad lines", path, list.more_errors);
  const common::Timestamp now = net::monotonic_now();
  for (const auto& d : list.destinations) {
    classifier->destinations().add(d, NonMigratingReason::preloaded, now);
  }
  spdlog::info("preloaded {} non-migrating destinations from {}", list.destinations.size(), path);
}

void Daemon::Impl::arm_expiry() {
  const common::Timestamp next = std::min(classifier->next_expiry(), path->next_timer());
  if (next == common::Timestamp::never()) {
    expiry.expires_after(std::chrono::seconds(60));
  } else {
    expiry.expires_after(std::max(next - net::monotonic_now(), common::Duration::zero()));
  }
  expiry.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or stopped
    const common::Timestamp now = net::monotonic_now();
    path->on_timer(now);  // before the watchdog judges flows at their deadlines
    classifier->on_expiry(now);
    drain_events();
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
  if (!links_fd && links.open()) {
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
  loosen_rp_filter();
  check_forwarding();
  path->on_devices_checked();
}

// A host that starts or stops forwarding (connection sharing switched on, a router's
// forwarding set late): the routed path's channel zone follows (RulesetSpec::forwarded_zone).
// The table is replaced, so its flow sets start empty, as after a reload.
void Daemon::Impl::check_forwarding() {
  if (!spec.routed) return;
  const bool forwards = kernel::host_forwards();
  if (forwards == spec.forwarded_zone) return;
  RulesetSpec next = spec;
  next.forwarded_zone = forwards;
  keep_kernel_counters();
  path->on_table_replaced();
  if (auto installed = rules.install(next); !installed) {
    if (installed.error().message != forwarding_error) {  // once, not every 2 s
      forwarding_error = installed.error().message;
      spdlog::error("forwarding switched {}: {}; the old rules stay (tried again every 2 s)",
                    forwards ? "on" : "off", forwarding_error);
    }
    return;
  }
  forwarding_error.clear();
  spec = next;
  spdlog::info("forwarding switched {}: the channel's packets {} conntrack zone {}",
               forwards ? "on" : "off", forwards ? "now in" : "no longer in", spec.ct_zone);
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
  if (auto attached = channel.reattach(&new_spec); !attached) {
    spdlog::error("channel interface {} re-created, but: {}; retrying",
                  config.daemon.channel_interface, attached.error().message);
    return;  // channel_ifindex unchanged: the next check tries again
  }
  keep_kernel_counters();
  path->before_channel_addresses(new_spec);
  if (auto installed = rules.install(new_spec); !installed) {
    spdlog::error("channel interface {} re-created, but the rules failed: {}; retrying",
                  config.daemon.channel_interface, installed.error().message);
    return;
  }
  spec = new_spec;  // first: the path reads the new addresses (the routed guard's rewrite)
  path->on_channel_recreated();
  path->on_table_replaced();
  channel_ifindex = index;
  ++channel_recreated;
  spdlog::warn("channel interface {} re-created (index {}): rules installed again",
               config.daemon.channel_interface, index);
}

// The channel device's tunnel addresses, which stateless addressing writes into channel
// packets and the ICMP rules match, can change under the daemon: a tunnel program that
// restarts re-creates its device and adds the addresses one at a time (channel_changed may
// have read the first only), a VPN client is given a new address. Checked on every kernel
// announcement (addresses are announced) and every heal_interval; the rules are installed
// again with the new ones. Until then, channel packets of the missing family are dropped
// (fail closed), never sent with another source.
void Daemon::Impl::follow_channel_addresses() {
  if (channel_ifindex == 0 || !probe.is_open() || tproxy()) return;
  const auto v4 = probe.global_addresses(common::IpFamily::v4, channel_ifindex);
  const auto v6 = probe.global_addresses(common::IpFamily::v6, channel_ifindex);
  if (!v4 || !v6) return;  // a dump failed: the next check reads again
  // Stateless addressing writes the first of each family; nat's check after masquerade
  // names them all (RulesetSpec::channel_sources_v4).
  const bool all_named = spec.nat && !spec.stateless;
  const auto first = [](const std::vector<std::string>& a) {
    return a.empty() ? std::string() : a.front();
  };
  if (all_named ? (*v4 == spec.channel_sources_v4 && *v6 == spec.channel_sources_v6)
                : (first(*v4) == spec.tunnel_v4 && first(*v6) == spec.tunnel_v6)) {
    return;
  }
  RulesetSpec new_spec = spec;
  common::Outcome done = channel.reattach(&new_spec);
  if (done) {
    keep_kernel_counters();
    path->before_channel_addresses(new_spec);
    done = rules.install(new_spec);
  }
  if (!done) {
    if (done.error().message != readdress_error) {
      readdress_error = done.error().message;
      spdlog::error("channel interface {}: its tunnel addresses changed, but: {}; retrying",
                    config.daemon.channel_interface, readdress_error);
    }
    return;
  }
  readdress_error.clear();
  const auto text = [all_named](const std::string& first, const std::vector<std::string>& all) {
    if (!all_named) return first.empty() ? std::string("none") : first;
    std::string joined;
    for (const auto& a : all) joined += (joined.empty() ? "" : " ") + a;
    return joined.empty() ? std::string("none") : joined;
  };
  spdlog::warn("channel interface {}: tunnel addresses now {} / {} (were {} / {}): rules "
               "installed again", config.daemon.channel_interface,
               text(new_spec.tunnel_v4, new_spec.channel_sources_v4),
               text(new_spec.tunnel_v6, new_spec.channel_sources_v6),
               text(spec.tunnel_v4, spec.channel_sources_v4),
               text(spec.tunnel_v6, spec.channel_sources_v6));
  spec = new_spec;  // first: the path reads the new addresses (the routed guard's rewrite)
  path->on_table_replaced();
  ++channel_readdressed;
}

// The pieces the daemon owns, each with its check and the installer that put it there:
// the nft table (and the queue rules), the policy-routing rules (and the routed path's flow
// rules), the routes through the channel, and what the native path adds (the guard).
void Daemon::Impl::setup_healing() {
  if (auto opened = probe.open(); !opened) {
    spdlog::error("self-healing off: {}", opened.error().message);
    return;
  }
  // The sources as the native path started with them: a change before the first check
  // counts (native_source_changed).
  native_source_v4 = probe.native_source(common::IpFamily::v4);
  native_source_v6 = probe.native_source(common::IpFamily::v6);
  // The native path's pieces first (the routed path's guard): checked and restored before
  // the table in each turn. A tool that took both (a flush, a detach) leaves handshakes
  // only the guard's drop until the table is back: its re-attach takes about a millisecond,
  // the table's install some 25.
  for (auto& piece : path->owned_pieces()) healer.add(std::move(piece));
  OwnedPiece table;
  table.piece = Piece::nft_table;
  table.present = [this]() -> std::optional<bool> {
    // The netdev chains are bound to the channel device: nothing to check while it is gone
    // (channel_changed installs the table again when it returns).
    if ((spec.routed || spec.stateless) && channel_ifindex == 0) return std::nullopt;
    std::vector<std::pair<std::uint8_t, std::string>> tables;
    if (spec.routed) {
      tables = {{NFPROTO_INET, spec.table}};  // its flows (and a tproxy channel's chains)
      if (spec.tproxy_port == 0) tables.push_back({NFPROTO_NETDEV, spec.table});
    } else {
      tables = {{NFPROTO_INET, spec.table}, {NFPROTO_IPV4, "raw"}, {NFPROTO_IPV6, "raw"}};
      if (spec.stateless) tables.push_back({NFPROTO_NETDEV, spec.table});
    }
    for (const auto& [family, name] : tables) {
      const std::optional<bool> there = probe.nft_table_exists(family, name);
      if (!there || !*there) return there;
    }
    return true;
  };
  table.restore = [this]() -> common::Outcome {
    // A table still there (another piece of it went) is replaced: keep its counters. A
    // flushed one took them with it; reading them would only cost time.
    const std::uint8_t family = spec.routed ? NFPROTO_NETDEV : NFPROTO_INET;
    if (probe.nft_table_exists(family, spec.table) != false) keep_kernel_counters();
    path->on_table_replaced();  // its sets start empty
    return rules.install(spec);
  };
  table.fail_closed = [this] { path->table_missing_fail_closed(); };
  table.resolved = [this] { path->table_back(); };
  healer.add(std::move(table));

  OwnedPiece ip_rules;
  ip_rules.piece = Piece::ip_rules;
  ip_rules.present = [this]() -> std::optional<bool> {
    for (auto [family, flag] : {std::pair{common::IpFamily::v4, "-4"},
                                std::pair{common::IpFamily::v6, "-6"}}) {
      auto have = probe.rule_priorities(family);
      if (!have) return std::nullopt;
      for (const auto& [priority, count] : kernel::routing_rule_priorities(routing.spec(), flag)) {
        auto it = have->find(priority);
        if (it == have->end() || it->second < count) return false;
      }
    }
    return true;
  };
  ip_rules.restore = [this]() -> common::Outcome {
    common::Outcome done = routing.restore_rules();
    path->on_rules_restored();
    return done;
  };
  healer.add(std::move(ip_rules));

  // The channel's own routes are fixed at start; the path's follow the network (the routed
  // path's per family come and go with its native source), so they are asked for each time.
  std::vector<ChannelRoute> own_routes;
  if (channel.owns_routes()) {
    for (auto family : {common::IpFamily::v4, common::IpFamily::v6}) {
      if (probe.has_default_route(family, channel.routing_table(), channel_ifindex) == true) {
        own_routes.push_back({family, channel.routing_table()});
      }
    }
  }
  if (!own_routes.empty() || !path->channel_routes().empty()) {
    OwnedPiece channel_routes;
    channel_routes.piece = Piece::channel_routes;
    channel_routes.present = [this, own_routes]() -> std::optional<bool> {
      if (channel_ifindex == 0 || !channel_up) return std::nullopt;  // none can exist
      std::vector<ChannelRoute> routes = own_routes;
      for (const auto& r : path->channel_routes()) routes.push_back(r);
      for (const auto& r : routes) {
        const std::optional<bool> there = probe.has_default_route(r.family, r.table,
                                                                  channel_ifindex);
        if (!there || !*there) return there;
      }
      return true;
    };
    channel_routes.restore = [this]() -> common::Outcome {
      common::Outcome ours = channel.restore_routes();
      common::Outcome paths = path->restore_channel_routes();
      return !ours ? ours : paths;
    };
    healer.add(std::move(channel_routes));
  }

  if (auto opened = state_watch.open(); opened) {
    state_route_fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(state_watch.route_fd()));
    state_nft_fd = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(state_watch.nft_fd()));
    arm_state_watch(*state_route_fd, false);
    arm_state_watch(*state_nft_fd, true);
  } else {
    spdlog::warn("self-healing: no kernel announcements ({}); checking every {} ms only",
                 opened.error().message, heal_interval.count());
  }
  arm_heal_timer();
}

void Daemon::Impl::arm_heal_timer() {
  common::Duration wait = heal_interval;
  const common::Timestamp next = healer.next_expiry();
  if (next != common::Timestamp::never()) {
    wait = std::clamp(next - net::monotonic_now(), common::Duration::zero(), wait);
  }
  heal_timer.expires_after(wait);
  heal_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or stopped
    heal_now();
  });
}

void Daemon::Impl::arm_state_watch(asio::posix::stream_descriptor& fd, bool nft) {
  fd.async_wait(asio::posix::stream_descriptor::wait_read,
                [this, &fd, nft](const boost::system::error_code& ec) {
                  if (ec) return;
                  if (nft ? state_watch.drain_nft() : state_watch.drain_route()) post_heal();
                  arm_state_watch(fd, nft);
                });
}

// A burst of announcements (a flush deletes many rules) makes one check.
void Daemon::Impl::post_heal() {
  if (heal_posted) return;
  heal_posted = true;
  asio::post(io, [this] {
    heal_posted = false;
    heal_now();
  });
}

void Daemon::Impl::heal_now() {
  check_devices();  // a re-created channel, a new device to guard
  follow_channel_addresses();
  update_channel_link();
  // A new source first (the route check then wants the new one); the channel's
  // wireguard-go then sends from it too.
  const NativeSources sources{probe.native_source(common::IpFamily::v4),
                              probe.native_source(common::IpFamily::v6)};
  path->follow_network(sources);
  if (native_source_changed(sources)) rebind_channel();
  healer.check();
  drain_events();  // flow rules restored or dropped may have changed the classifier's view
  notify_status();
  arm_heal_timer();
}

// Whether the source address a new native socket gets changed since the last check (both
// paths: the channel's own datagrams leave from it). The first reading only records it.
bool Daemon::Impl::native_source_changed(const NativeSources& sources) {
  bool changed = false;
  for (auto [read, last] : {std::pair{&sources.v4, &native_source_v4},
                            std::pair{&sources.v6, &native_source_v6}}) {
    const std::optional<std::string>& now = *read;
    if (!now) continue;  // a dump failed: judged at the next check
    if (*last && **last != *now) changed = true;
    *last = now;
  }
  return changed;
}

// wireguard-go keeps the source it last received on for each peer: after an address change
// its sockets are opened again (rebind_wireguard), else the channel stays silent.
void Daemon::Impl::rebind_channel() {
  if (config.daemon.channel_kind != core::ChannelKind::wireguard) return;  // not ours to know
  const std::string& ifname = config.daemon.channel_interface;
  auto done = rebind_wireguard(ifname);
  if (!done) {
    spdlog::warn("native address changed; rebinding {}'s WireGuard failed: {}", ifname,
                 done.error().message);
  } else if (*done) {
    ++channel_rebinds;
    spdlog::info("native address changed: {}'s WireGuard sockets opened again", ifname);
  }
}

// The systemd status line: the worst of the channel's state and the kernel state's.
void Daemon::Impl::notify_status() {
  std::string text = "deciding";
  if (!channel_up) {
    text = channel.describe() + " down: failed closed";
  } else if (!healer.healthy()) {
    text = "kernel state missing, failed closed (quicstepctl status: healing)";
  } else if (channel_health.state() == core::ChannelHealth::unanswered) {
    text = channel.describe() +
           " unanswered (it sends, nothing comes back): DNS, TCP and QUIC handshakes fail "
           "until it answers";
  }
  if (text != notified_status) {
    notified_status = text;
    sd_notify(0, ("STATUS=" + text).c_str());
  }
}

void Daemon::Impl::arm_health_timer() {
  health_timer.expires_after(std::chrono::seconds(1));
  health_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    judge_channel();
    arm_health_timer();
  });
}

// One reading of the channel's state (Channel::read_health); a change of health is logged.
void Daemon::Impl::judge_channel() {
  const bool wireguard = config.daemon.channel_kind == core::ChannelKind::wireguard;
  std::optional<core::WireGuardReading> reading;
  if (channel_up) {
    auto read = channel.read_health(spec.table);
    const std::string error = read ? std::string() : read.error().message;
    if (error != health_read_error) {
      if (!error.empty()) {
        spdlog::warn("channel health: cannot read {}: {}", channel.describe(), error);
      }
      health_read_error = error;
    }
    if (read) reading = std::move(*read);
  }
  const core::ChannelHealth before = channel_health.state();
  const auto unix_now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const core::ChannelHealth now =
      channel_health.update(net::monotonic_now(), unix_now, channel_up, reading);
  if (now == before) return;
  if (now == core::ChannelHealth::unanswered) {
    spdlog::warn("{} unanswered: {} has sent for {} s and received nothing ({}); DNS, "
                 "TCP and QUIC handshakes fail until it answers",
                 channel.describe(), wireguard ? "WireGuard" : tproxy() ? "it" : "the tunnel",
                 std::chrono::duration_cast<std::chrono::seconds>(
                             core::ChannelHealthOptions{}.unanswered_after).count(),
                 wireguard ? "the provider is gone, or WireGuard is blocked"
                           : "its program stopped forwarding, or its server is gone or blocked");
  } else if (before == core::ChannelHealth::unanswered && now == core::ChannelHealth::working) {
    spdlog::warn("{} answers again", channel.describe());
  } else {
    spdlog::info("{} health: {} -> {}", channel.describe(), to_string(before), to_string(now));
  }
  notify_status();
}

// Whether the channel is up (Channel::is_up: its device, or a tproxy channel's proxy client).
// While it is down channel packets find no route and meet `unreachable` (a proxy without a
// socket: they are dropped): nothing goes native that must not, and nothing works.
void Daemon::Impl::update_channel_link() {
  const bool up = channel.is_up(channel_ifindex != 0);
  if (up == channel_up) return;
  channel_up = up;
  if (!up) {
    ++channel_downs;
    channel_down_since = net::monotonic_now();
    spdlog::warn("{} is down: DNS, TCP and QUIC handshakes fail closed until it is up again",
                 channel.describe());
  } else {
    spdlog::warn("{} is up again after {:.1f} s", channel.describe(),
                 std::chrono::duration<double>(net::monotonic_now() - channel_down_since).count());
  }
  // The health at once, not at the next second's reading: a status read in between said
  // `up` and `health: down` together (seen after a proxy client's restart).
  judge_channel();
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
  const bool other_path = reload_changes_native_path(load.config);
  RulesetSpec new_spec;
  RoutingSpec new_routing;
  if (auto derived = derive_specs(load.config, &new_spec, &new_routing); !derived) {
    spdlog::error("reload refused: {}", derived.error().message);
    return;
  }
  if (load.config.daemon.queue_outbound != config.daemon.queue_outbound ||
      load.config.daemon.queue_inbound != config.daemon.queue_inbound ||
      load.config.daemon.channel_interface != config.daemon.channel_interface ||
      load.config.daemon.channel_kind != config.daemon.channel_kind ||
      load.config.daemon.channel_exempt_v4 != config.daemon.channel_exempt_v4 ||
      load.config.daemon.channel_exempt_v6 != config.daemon.channel_exempt_v6 ||
      load.config.daemon.channel_dns_set != config.daemon.channel_dns_set ||
      load.config.daemon.channel_dns_v4 != config.daemon.channel_dns_v4 ||
      load.config.daemon.channel_dns_v6 != config.daemon.channel_dns_v6 ||
      load.config.daemon.routing_table != config.daemon.routing_table ||
      other_path || kernel::routing_marks_differ(routing_spec, new_routing) ||
      path->reload_needs_restart(routing_spec, new_routing)) {
    spdlog::error("reload refused: queues, channel (kind, interface, exempt servers, DNS), routing "
                  "tables and marks, the native path and (routed) "
                  "its ports, DNS/TCP policy and native prefixes need a restart");
    return;
  }
  new_spec.exempt_v4 = spec.exempt_v4;
  new_spec.exempt_v6 = spec.exempt_v6;
  new_spec.tunnel_v4 = spec.tunnel_v4;
  new_spec.tunnel_v6 = spec.tunnel_v6;
  new_spec.channel_dns_v4 = spec.channel_dns_v4;
  new_spec.channel_dns_v6 = spec.channel_dns_v6;
  new_spec.udp_source_by_guard = spec.udp_source_by_guard;
  new_spec.forwarded_zone = spec.forwarded_zone;
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
    path->on_table_replaced();  // either table below starts with empty sets
    if (auto installed = rules.install(new_spec); !installed) {
      spdlog::error("reload: {}; keeping the old rules", installed.error().message);
      (void)rules.install(spec);  // best effort: on failure nothing of it stays
      return;
    }
  }
  config = std::move(load.config);
  spec = new_spec;
  // Keep every flow, its timers and the non-migrating cache unless a table's shape changed.
  if (!classifier->update_policy(config.policy)) {
    spdlog::warn("reload: flow table or cache sizes/timeouts changed; flow state reset");
    std::random_device rd;
    classifier = std::make_unique<Classifier>(config.policy, (std::uint64_t(rd()) << 32) | rd());
    path->on_classifier_reset();
  }
  preload_destinations();
  spdlog::info("reloaded {} ({})", options.config_path,
               new_rules ? "kernel rules replaced" : "kernel rules unchanged");
  sd_notify(0, "STATUS=reloaded");
}

nlohmann::json Daemon::Impl::status() {
  // A proxy client's socket comes and goes with no kernel announcement; the heal timer
  // sees it within heal_interval, but a status read sooner must not say "down" about a
  // proxy that already carries fetches (seen: a LAN host's five fetches in 0.4 s after
  // ss-redir's restart, then `up: false`).
  if (tproxy()) update_channel_link();
  StatusSnapshot s;
  s.classifier = classifier.get();
  s.kernel = read_kernel_counters(spec.table);
  for (const auto& [name, k] : kernel_base) {
    s.kernel[name].packets += k.packets;
    s.kernel[name].bytes += k.bytes;
  }
  path->add_status(s);
  s.channel_interface = spec.channel_interface;
  s.addressing = std::string(to_string(config.daemon.addressing));
  s.uptime_s = std::chrono::duration<double>(net::monotonic_now() - started).count();
  s.reloads = reloads;
  s.channel_recreated = channel_recreated;
  s.channel_readdressed = channel_readdressed;
  nlohmann::json j = status_json(s);
  j["native_path"] = path->name();
  if (!routed_unavailable.empty()) j["routed_unavailable"] = routed_unavailable;
  j["channel"]["kind"] = std::string(to_string(config.daemon.channel_kind));
  // The channel's resolvers (client/README.md, "DNS through the channel") and the queries
  // sent to them instead of the host's resolver.
  j["channel"]["dns"] = nlohmann::json::array();
  for (const std::string* dns : {&spec.channel_dns_v4, &spec.channel_dns_v6}) {
    if (!dns->empty()) j["channel"]["dns"].push_back(*dns);
  }
  const auto redirected = s.kernel.find("dns_redirected");
  j["channel"]["dns_redirected"] = redirected == s.kernel.end() ? 0 : redirected->second.packets;
  if (tproxy()) j["channel"]["proxy"] = {{"port", config.daemon.tproxy_port}};
  j["channel"]["up"] = channel_up;
  j["channel"]["downs"] = channel_downs;
  j["channel"]["down_for_s"] =
      channel_up ? 0.0
                 : std::chrono::duration<double>(net::monotonic_now() - channel_down_since).count();
  j["channel"]["health"] = std::string(to_string(channel_health.state()));
  j["channel"]["unanswered_episodes"] = channel_health.unanswered_episodes();
  j["channel"]["rebinds"] = channel_rebinds;
  j["channel"]["handshake_age_s"] = channel_health.handshake_age_s()
                                        ? nlohmann::json(*channel_health.handshake_age_s())
                                        : nlohmann::json(nullptr);
  if (const auto& r = channel_health.last_reading()) {
    std::uint64_t rx = 0, tx = 0;
    for (const auto& peer : r->peers) {
      rx += peer.rx_bytes;
      tx += peer.tx_bytes;
    }
    if (config.daemon.channel_kind == core::ChannelKind::wireguard) {
      j["channel"]["wireguard"] = {{"peers", r->peers.size()}, {"rx_bytes", rx}, {"tx_bytes", tx}};
    } else if (tproxy()) {
      j["channel"]["proxy"]["rx_bytes"] = rx;
      j["channel"]["proxy"]["tx_bytes"] = tx;
    } else {
      j["channel"]["device"] = {{"rx_bytes", rx}, {"tx_bytes", tx}};
    }
  }
  j["healing"] = healer.status_json();
  j["syscall_filter"] = syscall_filter;
  path->add_status_json(j);
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

common::Outcome Daemon::start() {
  common::Outcome started = impl_->start();
  if (!started) {
    impl_->remove_installed();  // now, before the caller reports the error
    impl_->rp_filter.restore();
  }
  return started;
}

int Daemon::run() {
  // Setup is done: from here on only a system service's calls (syscall_filter.hpp). A
  // kernel without seccomp leaves the daemon as it was, said in the log and the status.
  if (impl_->config.daemon.syscall_filter) {
    auto filter = install_syscall_filter();
    if (filter.ok()) {
      impl_->syscall_filter = {{"state", "on"}, {"allowed", filter->allowed}};
      spdlog::info("system-call filter on: {} calls allowed", filter->allowed);
    } else {
      impl_->syscall_filter = {{"state", "failed"}, {"error", filter.error().message}};
      spdlog::error("system-call filter: {}; running without it", filter.error().message);
    }
  }
  sd_notify(0, "READY=1\nSTATUS=deciding");
  spdlog::info("quicstepd running: channel {} ({}), queues {}/{}", impl_->spec.channel_interface,
               to_string(impl_->config.daemon.addressing), impl_->spec.queue_outbound,
               impl_->spec.queue_inbound);
  impl_->io.run();
  impl_->remove_installed();
  impl_->rp_filter.restore();
  spdlog::info("rules and routes removed");
  return 0;
}

common::Outcome cleanup_everything(const Config& config) {
  RulesetSpec spec;
  RoutingSpec routing;
  // The names and priorities to remove; a config the checks refuse still names them.
  (void)derive_specs(config, &spec, &routing);
  common::Outcome removed = remove_kernel_rules(spec.table);
  remove_routing(routing);
  RoutedPath::remove_guard(config.daemon.guard_pin_dir);  // whichever path ran
  Channel::cleanup(config.daemon);
  return removed;
}

}  // namespace quicstep::client::daemon
