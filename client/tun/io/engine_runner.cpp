#include "client/tun/io/engine_runner.hpp"

#include <spdlog/spdlog.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "client/core/policy_config.hpp"
#include "client/tun/engine_status.hpp"

namespace quicstep::client::tun {

std::optional<EngineFiles> load_engine_files(const std::string& program,
                                             const std::string& wg_config,
                                             const std::string& policy_config,
                                             const EndpointLookup& lookup) {
  std::ifstream in(wg_config);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s: %s\n", program.c_str(), wg_config.c_str(),
                 std::strerror(errno));
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  const WgQuickLoad wg = parse_wg_quick(text.str(), wg_config, lookup);
  for (const auto& e : wg.errors) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.to_string().c_str());
  }
  if (!wg.ok()) return std::nullopt;
  for (const auto& i : wg.ignored) {
    spdlog::info("{}:{}: {} is wg-quick's, ignored", wg_config, i.line, i.key);
  }
  for (const WgPeer& p : wg.config.peers) {
    if (!p.endpoint.host.empty()) {
      spdlog::info("{}:{}: Endpoint {} is {} (looked up once, at start)", wg_config, p.line,
                   p.endpoint.host, p.endpoint.to_string());
    }
  }
  EngineFiles files;
  files.wg = wg.config;
  if (!policy_config.empty()) {
    const core::ConfigLoad load = core::load_config(policy_config);
    for (const auto& e : load.errors) {
      std::fprintf(stderr, "%s: %s\n", program.c_str(), e.to_string().c_str());
    }
    if (!load.ok()) return std::nullopt;
    files.engine.policy = load.config.policy;
  }
  // The channel's resolvers: the first address of each family on the DNS line.
  for (const common::IpAddress& a : wg.config.dns_servers) {
    auto& slot = a.family == common::IpFamily::v4 ? files.engine.channel_dns_v4
                                                   : files.engine.channel_dns_v6;
    if (!slot) slot = a;
  }
  // The tunnel's addresses: the first of each family on the Address line.
  for (const IpPrefix& a : wg.config.addresses) {
    auto& slot = a.address.family == common::IpFamily::v4 ? files.engine.tunnel_v4
                                                           : files.engine.tunnel_v6;
    if (!slot) slot = a.address;
  }
  files.mtu = wg.config.mtu.value_or(1420);
  files.engine.held_max_payload = files.mtu;
  files.uapi_set = render_uapi_set(wg.config);
  return files;
}

EngineRunner::EngineRunner(EngineLoop& loop, WgHelperOptions options, std::string uapi_set,
                           WgHelperProcess helper)
    : loop_(loop), options_(std::move(options)), uapi_set_(std::move(uapi_set)),
      helper_(std::move(helper)),
      health_timer_(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {
  itimerspec every_second{};
  every_second.it_interval.tv_sec = 1;
  every_second.it_value.tv_nsec = 1;  // the first request at once
  if (!health_timer_.valid() ||
      timerfd_settime(health_timer_.get(), 0, &every_second, nullptr) != 0 ||
      !loop_.watch_descriptor(health_timer_.get(), [this] { on_health_tick(); })) {
    spdlog::warn("the channel's health is not read (no timer in the loop)");
  }
}

void EngineRunner::on_health_tick() {
  std::uint64_t ticks = 0;
  [[maybe_unused]] const ssize_t r = ::read(health_timer_.get(), &ticks, sizeof ticks);
  const common::Timestamp now = EngineLoop::now();
  // The loop runs only with a helper (a dead one is restarted outside it), so each tick
  // has one; a reading is judged when its answer is in, or when none came in 5 s.
  bool judge = false;
  std::optional<core::WireGuardReading> reading;
  std::string error;
  if (helper_ && helper_->uapi_pending()) {
    if (auto answer = helper_->poll_uapi()) {
      judge = true;
      if (!answer->ok()) {
        error = answer->error().message;
      } else if (auto parsed = core::parse_uapi_get(**answer); !parsed.ok()) {
        error = parsed.error().message;
      } else {
        reading = std::move(*parsed);
      }
    } else if (now - health_asked_ > std::chrono::seconds(5)) {
      judge = true;  // a helper that does not answer tells nothing: unknown
      error = "the WireGuard helper did not answer `get=1` in 5 s";
    }
  }
  if (error != health_error_) {
    if (!error.empty()) spdlog::warn("channel health: {}", error);
    health_error_ = error;
  }
  if (judge) {
    const core::ChannelHealth before = health_.state();
    const std::int64_t unix_now = std::chrono::duration_cast<std::chrono::seconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
    const core::ChannelHealth after = health_.update(now, unix_now, helper_.has_value(), reading);
    if (after == before) {
    } else if (after == core::ChannelHealth::unanswered) {
      spdlog::warn("the WireGuard channel is unanswered: it has sent for {} s and received "
                   "nothing (the provider is gone, or WireGuard is blocked); DNS, TCP and QUIC "
                   "handshakes fail until it answers",
                   std::chrono::duration_cast<std::chrono::seconds>(
                       core::ChannelHealthOptions{}.unanswered_after).count());
    } else if (before == core::ChannelHealth::unanswered) {
      spdlog::warn("the WireGuard channel answers again ({})", core::to_string(after));
    } else {
      spdlog::info("the WireGuard channel's health: {} -> {}", core::to_string(before),
                   core::to_string(after));
    }
  }
  if (helper_ && !helper_->uapi_pending()) {
    if (helper_->begin_uapi("get=1\n\n").ok()) health_asked_ = now;
  }
}

std::string EngineRunner::answer(const std::string& request) {
  if (request == "status") {
    FastPathCounters fast;
    if (loop_.fast_path() != nullptr) fast = loop_.fast_path()->counters();
    nlohmann::json j = engine_status_json(loop_.engine(), {fast.packets, fast.bytes});
    // Confirmed flows' short headers sent by the kernel without crossing the engine (Linux);
    // null without a fast path (Android, --no-fast-path, a kernel without tcx).
    j["fast_path"] = loop_.fast_path() == nullptr
                         ? nlohmann::json(nullptr)
                         : nlohmann::json{{"flows", fast.flows},
                                          {"packets", fast.packets},
                                          {"bytes", fast.bytes},
                                          {"installed", fast.installed},
                                          {"install_failed", fast.install_failed}};
    const LoopCounters& c = loop_.counters();
    j["loop"] = {{"tun_write_dropped", c.tun_write_dropped},
                 {"channel_send_dropped", c.channel_send_dropped},
                 {"native_send_failed", c.native_send_failed},
                 {"relay_socket_failed", c.relay_socket_failed},
                 {"protect_failed", c.protect_failed},
                 {"tun_read_dropped", c.tun_read_dropped},
                 {"tun_gso_writes", c.tun_gso_writes},
                 {"tun_gso_segments", c.tun_gso_segments},
                 {"tun_gso_refused", c.tun_gso_refused},
                 {"wakeups", c.wakeups},
                 {"timer_arms", c.timer_arms},
                 {"timer_wakeups", c.timer_wakeups},
                 {"relay_reads", c.relay_reads},
                 {"relay_gro_reads", c.relay_gro_reads},
                 {"relay_gso_sends", c.relay_gso_sends},
                 {"relay_gso_segments", c.relay_gso_segments},
                 {"relay_gso_refused", c.relay_gso_refused},
                 {"relays_lingered", c.relays_lingered},
                 {"relays_lingering", loop_.relays_lingering()},
                 {"linger_datagrams", c.linger_datagrams},
                 {"last_error", c.last_error}};
    const TunFormat& f = loop_.tun_format();
    j["offloads"] = {{"vnet_header", f.vnet_header}, {"udp_gso", f.udp_gso},
                     {"relay_gro", f.relay_gro}, {"relay_gso", f.relay_gso}};
    j["helper_pid"] = helper_pid();
    nlohmann::json& ch = j["channel"];
    ch["kind"] = "wireguard";
    ch["up"] = helper_.has_value();
    ch["health"] = std::string(core::to_string(health_.state()));
    const auto age = health_.handshake_age_s();
    ch["handshake_age_s"] = age ? nlohmann::json(*age) : nlohmann::json(nullptr);
    ch["unanswered_episodes"] = health_.unanswered_episodes();
    j["restarts"] = {{"helper", helper_restarts_}, {"tun_device", tun_recreated_}};
    if (more_status_) more_status_(j);
    return j.dump() + "\n";
  }
  if (request == "network-changed") {
    network_changed();
    return "{\"ok\":true}\n";
  }
  return "{\"error\":\"unknown request\"}\n";
}

// wireguard-go opens its sockets again on `listen_port=` of its own port, and forgets the
// source its peers last used (the address that may be gone).
void EngineRunner::network_changed(ChangedFamilies changed) {
  loop_.network_changed(changed);
  if (!helper_) return;
  auto got = helper_->uapi("get=1\n\n");
  if (!got.ok()) return;
  const std::size_t at = got->find("listen_port=");
  if (at == std::string::npos) return;
  const std::string port = got->substr(at + 12, got->find('\n', at) - at - 12);
  auto set = helper_->uapi("set=1\nlisten_port=" + port + "\n\n");
  if (!set.ok() || set->rfind("errno=0", 0) != 0) {
    spdlog::warn("WireGuard helper re-bind: {}", set.ok() ? *set : set.error().message);
  }
}

namespace {

// Sleeps `total` in 50 ms steps, returning early once `stopping` is set.
void sleep_unless_stopping(std::chrono::milliseconds total, const volatile sig_atomic_t& stopping) {
  for (auto slept = std::chrono::milliseconds(0); slept < total && !stopping;
       slept += std::chrono::milliseconds(50)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

std::optional<WgHelperProcess> start_helper(const WgHelperOptions& options,
                                            const std::string& uapi_set,
                                            const volatile sig_atomic_t& stopping) {
  auto backoff = std::chrono::milliseconds(250);
  while (!stopping) {
    auto started = WgHelperProcess::start(options, uapi_set);
    if (started.ok()) {
      spdlog::info("WireGuard helper pid {}", started->pid());
      return std::optional<WgHelperProcess>(std::move(*started));
    }
    spdlog::error("{}{}; trying again in {} ms", started.error().message,
                  options.log_path.empty() ? "" : " (its log: " + options.log_path + ")",
                  backoff.count());
    sleep_unless_stopping(backoff, stopping);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10'000));
  }
  return std::nullopt;
}

std::string EngineRunner::run(const volatile sig_atomic_t& stopping) {
  for (;;) {
    const std::string ended = loop_.run();
    if (stopping) return {};
    if (ended == EngineLoop::kChannelClosed) {
      spdlog::warn("the WireGuard helper died; starting it again");
      helper_.reset();  // reaps the dead one
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      helper_ = start_helper(options_, uapi_set_, stopping);
      if (!helper_) return {};
      ++helper_restarts_;
      loop_.replace_channel(helper_->take_packets());
      continue;
    }
    if (ended != EngineLoop::kTunGone || !reopen_tun_) return ended;
    // Another tool deleted the device. Meanwhile its routes are gone with it and the nft
    // guard alone keeps TCP, DNS and the QUIC ports off the native link (tun_routes.hpp).
    spdlog::warn("{}: creating it again", ended);
    for (auto backoff = std::chrono::milliseconds(250);; backoff = std::min(backoff * 2,
                                                        std::chrono::milliseconds(10'000))) {
      auto reopened = reopen_tun_();
      if (reopened.ok()) {
        ++tun_recreated_;
        loop_.replace_tun(std::move(*reopened));
        spdlog::info("the TUN device is back ({} time{}); the engine's flows go on",
                     tun_recreated_, tun_recreated_ == 1 ? "" : "s");
        break;
      }
      spdlog::error("the TUN device: {}; trying again in {} ms", reopened.error().message,
                    backoff.count());
      sleep_unless_stopping(backoff, stopping);
      if (stopping) return {};
    }
  }
}

}  // namespace quicstep::client::tun
