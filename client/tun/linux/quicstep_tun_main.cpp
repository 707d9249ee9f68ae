// quicstep-tun: QUICstep as a TUN engine on Linux (client/tun/README.md). Opens a persistent
// TUN device, routes every unmarked packet into it (tun_routes.hpp), starts the WireGuard
// helper with the wg-quick file, and runs the engine's loop until SIGTERM or SIGINT. A dead
// WireGuard helper is started again (its flows go on); a dead engine leaves the TUN and the
// routes in place, so that nothing leaves unprotected until it runs again or
// `quicstep-tun --cleanup` removes them.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "client/core/policy_config.hpp"
#include "client/kernel/kernel_probe.hpp"
#include "client/tun/engine_status.hpp"
#include "client/tun/io/engine_loop.hpp"
#include "client/tun/io/engine_runner.hpp"
#include "client/tun/io/fd_exchange.hpp"
#include "client/tun/io/tun_device.hpp"
#include "client/tun/io/wg_helper_process.hpp"
#include "client/tun/linux/endpoint_lookup.hpp"
#include "client/tun/linux/tun_fast_path.hpp"
#include "client/tun/linux/tun_healing.hpp"
#include "client/tun/linux/tun_routes.hpp"
#include "net/namespace_lock.hpp"
#include "client/tun/wg_quick_uapi.hpp"
#include "quicstep_version.hpp"

namespace {

using namespace quicstep::client;
using quicstep::client::kernel::KernelProbe;
using quicstep::net::UniqueFd;

struct Options {
  std::string wg_config;
  std::string config;
  std::string device = "qst0";
  std::string helper;
  std::string helper_log;
  std::string control = "/run/quicstep-tun.sock";
  std::uint32_t fwmark = 51830;
  std::uint32_t table = 51830;
  bool no_routes = false;
  bool no_offload = false;
  bool no_fast_path = false;
  bool cleanup = false;
};

tun::EngineLoop* g_loop = nullptr;
volatile sig_atomic_t g_stopping = 0;

void on_signal(int) {
  g_stopping = 1;
  if (g_loop != nullptr) g_loop->stop();
}

// The helper beside this executable (the build tree's tun/, or the same directory), or where
// an install puts it (PREFIX/lib/quicstep beside PREFIX/sbin; the package's /usr/lib/quicstep).
std::string default_helper() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& candidate : {dir + "/tun/qs-wg-helper", dir + "/qs-wg-helper",
                                         dir + "/../lib/quicstep/qs-wg-helper"}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "/usr/lib/quicstep/qs-wg-helper";
}

// The rtnetlink announcements of addresses and routes, and the native source they give.
class NetworkWatch {
 public:
  bool open() {
    fd_.reset(socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE));
    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
                     RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    if (!fd_.valid() || bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        !probe_.open().ok()) {
      return false;
    }
    (void)changed();  // the first reading
    return true;
  }
  int fd() const { return fd_.get(); }
  // Drains the announcements; which families' native source changed (none: nothing to do).
  tun::ChangedFamilies changed() {
    char buf[8192];
    while (recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    tun::ChangedFamilies changed{false, false};
    for (auto [family, last, flag] :
         {std::tuple{quicstep::common::IpFamily::v4, &v4_, &changed.v4},
          std::tuple{quicstep::common::IpFamily::v6, &v6_, &changed.v6}}) {
      const std::optional<std::string> now = probe_.native_source(family);
      if (now && *now != *last) {
        *flag = started_;
        *last = *now;
      }
    }
    started_ = true;
    return changed;
  }
  std::string describe() const {
    return (v4_.empty() ? "none" : v4_) + ", " + (v6_.empty() ? "none" : v6_);
  }

 private:
  UniqueFd fd_;
  KernelProbe probe_;
  std::string v4_, v6_;
  bool started_ = false;
};

// Whether a rule of an earlier quicstep-tun sits at `priority` (either family).
bool rule_in_place(std::uint32_t priority) {
  KernelProbe probe;
  if (!probe.open()) return false;
  for (auto family : {quicstep::common::IpFamily::v4, quicstep::common::IpFamily::v6}) {
    const auto have = probe.rule_priorities(family);
    if (have && have->count(priority) != 0) return true;
  }
  return false;
}

int cleanup(const Options& o) {
  tun::TunRouting routing;
  routing.device = o.device;
  routing.table = o.table;
  routing.fwmark = o.fwmark;
  tun::remove_routes(routing);
  if (auto removed = tun::remove_tun(o.device); !removed.ok()) {
    spdlog::warn("cleanup: {}", removed.error().message);
  }
  tun::EndpointCache(o.device).remove();
  unlink(o.control.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"quicstep-tun: QUICstep's TUN engine (DNS, TCP and QUIC handshakes through a "
               "WireGuard channel of its own; QUIC data natively)"};
  app.set_version_flag("--version", std::string("quicstep-tun ") + quicstep::kVersion);
  app.add_option("--wg-config", o.wg_config,
                 "the channel's wg-quick file (an Endpoint's name is looked up once, at start)");
  app.add_option("--config", o.config,
                 "quicstepd.toml: the classifier's policy and the [tun] table (device, "
                 "wg_config, table, fwmark, control_socket, offload, fast_path); options "
                 "override it");
  app.add_option("--tun", o.device, "the TUN device's name")->capture_default_str();
  app.add_option("--wg-helper", o.helper,
                 "the qs-wg-helper executable (default: beside this one, or ../lib/quicstep)");
  app.add_option("--helper-log", o.helper_log, "append the helper's stderr to this file");
  app.add_option("--control-socket", o.control, "status socket (quicstepctl's protocol)")
      ->capture_default_str();
  app.add_option("--fwmark", o.fwmark, "the mark of the engine's own sockets")->capture_default_str();
  app.add_option("--table", o.table, "the routing table of the TUN's default routes")
      ->capture_default_str();
  app.add_flag("--no-routes", o.no_routes, "set no address, route or rule (the caller did)");
  app.add_flag("--no-offload", o.no_offload,
               "one write per packet into the TUN, one datagram per relay read and send (no "
               "IFF_VNET_HDR, UDP GSO, UDP_GRO or UDP_SEGMENT)");
  app.add_flag("--no-fast-path", o.no_fast_path,
               "every packet crosses the engine, as on Android (no tc program on the TUN "
               "sending confirmed flows' QUIC short headers natively)");
  app.add_flag("--cleanup", o.cleanup, "remove the TUN, its routes and rules left by a crash, exit");
  CLI11_PARSE(app, argc, argv);
  // The config's [tun] table, where the command line does not say otherwise.
  if (!o.config.empty()) {
    const core::ConfigLoad load = core::load_config(o.config);
    for (const auto& e : load.errors) {
      std::fprintf(stderr, "quicstep-tun: %s\n", e.to_string().c_str());
    }
    if (!load.ok()) return 2;
    const core::TunSettings& t = load.config.tun;
    if (app.count("--tun") == 0) o.device = t.device;
    if (app.count("--wg-config") == 0) o.wg_config = t.wg_config;
    if (app.count("--table") == 0) o.table = t.table;
    if (app.count("--fwmark") == 0) o.fwmark = t.fwmark;
    if (app.count("--control-socket") == 0) o.control = t.control_socket;
    if (app.count("--no-offload") == 0) o.no_offload = !t.offload;
    if (app.count("--no-fast-path") == 0) o.no_fast_path = !t.fast_path;
  }
  // One engine per network namespace (net/namespace_lock.hpp): a second one would take the
  // running one's TUN, routes and rules for a dead engine's, and its --cleanup remove them.
  const auto lock = quicstep::net::NamespaceLock::acquire("quicstep/quicstep-tun");
  if (!lock) {
    std::fprintf(stderr, "quicstep-tun: another quicstep-tun runs in this network namespace "
                         "(%s); %s\n", lock.error().message.c_str(),
                 o.cleanup ? "it removes what it installed when it stops; nothing removed"
                           : "stop it first; nothing installed");
    return 1;
  }
  if (o.cleanup) return cleanup(o);
  if (o.wg_config.empty()) {
    std::fprintf(stderr, "quicstep-tun: no channel: give --wg-config FILE, or wg_config in "
                         "the [tun] table of --config\n");
    return 2;
  }
  if (o.helper.empty()) o.helper = default_helper();

  // Endpoint names. Over the rules of an engine that died, a lookup would go into its TUN
  // and never be answered: the names it looked up are taken instead (endpoint_lookup.hpp).
  const tun::EndpointCache endpoint_cache(o.device);
  const bool over_dead_engine = !o.no_routes && rule_in_place(tun::TunRouting{}.rule_priority);
  const std::map<std::string, quicstep::common::IpAddress> cached =
      over_dead_engine ? endpoint_cache.read() : std::map<std::string, quicstep::common::IpAddress>{};
  bool lookup_failed = false;
  const tun::EndpointLookup lookup =
      [&](const std::string& host) -> quicstep::common::Result<quicstep::common::IpAddress,
                                                               quicstep::common::Failure> {
    if (over_dead_engine) {
      if (auto it = cached.find(host); it != cached.end()) {
        spdlog::info("Endpoint {}: {}, as the engine that died looked it up (its rules are in "
                     "place)", host, it->second.to_string());
        return it->second;
      }
      lookup_failed = true;
      return quicstep::common::Failure(
          "cannot look up " + host + ": the rules of a quicstep-tun that died are in place and "
          "would take the lookup; run quicstep-tun --cleanup first, or give an address");
    }
    auto found = tun::look_up_endpoint(host);
    lookup_failed = lookup_failed || !found;
    return found;
  };
  const std::optional<tun::EngineFiles> files =
      tun::load_engine_files("quicstep-tun", o.wg_config, o.config, lookup);
  if (!files) return lookup_failed ? 1 : 2;  // a lookup may work later; a bad file will not
  const unsigned mtu = files->mtu;

  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto device = tun::open_tun(o.device, !o.no_offload);
  if (!device.ok()) {
    std::fprintf(stderr, "quicstep-tun: %s\n", device.error().message.c_str());
    return 1;
  }
  tun::TunRouting routing{o.device, o.table, o.fwmark, 30500, mtu, files->wg.addresses,
                          files->engine.policy.quic_ports};
  if (!o.no_routes) {
    if (auto ok = tun::install_routes(routing); !ok.ok()) {
      std::fprintf(stderr, "quicstep-tun: %s\n", ok.error().message.c_str());
      return 1;
    }
    std::map<std::string, quicstep::common::IpAddress> names;
    for (const tun::WgPeer& p : files->wg.peers) {
      if (!p.endpoint.host.empty()) names.insert_or_assign(p.endpoint.host, p.endpoint.address);
    }
    if (names.empty()) {
      endpoint_cache.remove();
    } else if (!endpoint_cache.write(names)) {
      spdlog::warn("cannot write {}: after a crash, a new engine cannot take the endpoint's "
                   "address from there", endpoint_cache.path);
    }
  }
  const tun::WgHelperOptions helper_options{
      o.helper, {"--fwmark", std::to_string(o.fwmark)}, mtu, o.helper_log};
  std::optional<tun::WgHelperProcess> started =
      tun::start_helper(helper_options, files->uapi_set, g_stopping);
  if (!started) {  // stopped while the helper could not start
    if (!o.no_routes) {
      tun::remove_routes(routing);
      endpoint_cache.remove();
    }
    (void)tun::stop_persisting(device->get(), o.device);
    return 0;
  }

  const int first_tun_fd = device->get();  // owned by the loop from here on
  tun::MarkProtector protector(o.fwmark);
  tun::EngineLoop loop(files->engine, std::move(*device), started->take_packets(), protector,
                       std::random_device{}() | std::uint64_t{std::random_device{}()} << 32);
  // Offloads: a virtio header on the TUN (free on every kernel with IFF_VNET_HDR), UDP GSO
  // writes where the kernel takes them, UDP_GRO on relay sockets.
  tun::TunFormat format;
  if (!o.no_offload) {
    format.vnet_header = true;
    format.udp_gso = tun::tun_takes_udp_gso(first_tun_fd);
    format.relay_gro = true;
    format.relay_gso = true;
  }
  loop.use_tun_format(format);
  // The kernel fast path for confirmed flows (tun_fast_path.hpp), where the kernel has tcx.
  std::unique_ptr<tun::TunFastPath> fast_path;
  if (!o.no_fast_path) {
    auto attached = tun::TunFastPath::attach(o.device, o.fwmark);
    if (attached.ok()) {
      fast_path = std::move(*attached);
      loop.use_fast_path(fast_path.get());
    } else {
      spdlog::info("no fast path ({}): every packet crosses the engine",
                   attached.error().message);
    }
  }
  tun::EngineRunner runner(loop, helper_options, files->uapi_set, std::move(*started));
  // A device another tool deleted (`ip link del`) is created again, with its addresses and
  // routes; its rules and nft table never went.
  runner.on_tun_gone([&]() -> quicstep::common::Result<quicstep::net::UniqueFd,
                                                        quicstep::common::Failure> {
    auto again = tun::open_tun(o.device, !o.no_offload);
    if (!again.ok()) return again;
    if (fast_path) {
      if (auto linked = fast_path->reattach(o.device); !linked.ok()) {
        spdlog::warn("the new {}: fast path: {}", o.device, linked.error().message);
      }
    }
    if (o.no_routes) return again;
    if (auto routed = tun::install_device_routes(routing); !routed.ok()) {
      // The device exists: self-healing puts its routes back on its next check.
      spdlog::warn("the new {}: {}", o.device, routed.error().message);
    }
    return again;
  });
  if (auto control = tun::listen_unix(o.control); control.ok()) {
    loop.serve_control(std::move(*control),
                       [&runner](const std::string& request) { return runner.answer(request); });
  } else {
    spdlog::warn("control socket: {}; status unavailable", control.error().message);
  }
  // The network: when the main table's default route gives another source (a new address,
  // a new uplink), every relay of that family and the helper's socket are opened again on
  // it, and their flows' servers see the address change and migrate.
  NetworkWatch network;
  if (network.open()) {
    loop.watch_descriptor(network.fd(), [&] {
      const tun::ChangedFamilies changed = network.changed();
      if (!changed.v4 && !changed.v6) return;
      spdlog::info("network changed: native source {}; {} relays and the channel re-bound",
                   network.describe(),
                   changed.v4 && changed.v6 ? "all" : changed.v4 ? "IPv4" : "IPv6");
      runner.network_changed(changed);
    });
  } else {
    spdlog::warn("no rtnetlink watch: network changes are not followed");
  }
  // Self-healing: the rules, routes and nft table that another tool removes are put back.
  tun::TunHealing healing(routing);
  if (o.no_routes) {
    // The caller's routes: not ours to put back.
  } else if (auto opened = healing.open(); !opened) {
    spdlog::warn("self-healing off: {}", opened.error().message);
  } else if (!loop.watch_descriptor(healing.route_fd(), [&] { healing.on_route(); }) ||
             !loop.watch_descriptor(healing.nft_fd(), [&] { healing.on_nft(); }) ||
             !loop.watch_descriptor(healing.timer_fd(), [&] { healing.on_timer(); })) {
    spdlog::warn("self-healing off: its descriptors could not join the loop");
  } else {
    runner.add_status([&](nlohmann::json& j) { j["healing"] = healing.status_json(); });
  }
  g_loop = &loop;
  spdlog::info("quicstep-tun {}: {} up, WireGuard helper pid {}; offloads: {}; fast path: {}",
               quicstep::kVersion, o.device, runner.helper_pid(),
               o.no_offload ? "off"
               : format.udp_gso ? "UDP GSO into the TUN, UDP_GRO and UDP_SEGMENT on relays"
                                : "UDP_GRO and UDP_SEGMENT on relays (no UDP GSO into a TUN in "
                                  "this kernel)",
               fast_path ? "on" : "off");

  if (const std::string ended = runner.run(g_stopping); !ended.empty()) {
    spdlog::error("engine: {}; the TUN and its routes stay (no traffic, no leak)", ended);
    g_loop = nullptr;
    return 1;
  }
  g_loop = nullptr;
  spdlog::info("stopping: removing {} and its routes", o.device);
  if (!o.no_routes) {
    tun::remove_routes(routing);
    endpoint_cache.remove();
  }
  if (auto off = tun::stop_persisting(loop.tun_descriptor(), o.device); !off.ok()) {
    spdlog::warn("{}", off.error().message);
  }
  unlink(o.control.c_str());
  return 0;
}
