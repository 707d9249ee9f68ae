// EngineRunner: what every frontend of the TUN engine does around its EngineLoop, the same
// on Linux (quicstep-tun) and Android (qs-engine): keeps a WireGuard helper running (a dead
// one is started again with the same wg-quick settings and its pair given to the loop; the
// engine's flows go on), judges the channel's health from the helper's WireGuard state once
// a second (core::ChannelHealthJudge, as quicstepd does: `working`, `idle`, `unanswered`
// after 20 s of sending with nothing back — the provider gone, or WireGuard blocked —,
// `unknown` while the helper does not answer), answers the control socket, and follows a network change (every
// relay opened again, and the helper's socket too, so that servers see the new address).
#pragma once

#include <signal.h>

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "client/core/channel_health.hpp"
#include "client/tun/engine_core.hpp"
#include "client/tun/io/engine_loop.hpp"
#include "client/tun/io/wg_helper_process.hpp"
#include "client/tun/wg_quick_uapi.hpp"
#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::tun {

// The engine's files, read and checked: the wg-quick file (the channel) and, when given,
// quicstepd.toml (the classifier's policy).
struct EngineFiles {
  WgQuickConfig wg;
  EngineConfig engine;
  std::string uapi_set;  // the helper's `set=1` request
  unsigned mtu = 1420;   // the channel's (wg-quick's MTU, or its default)
};

// Reads both files. Every error is written to stderr as "`program`: file:line: ...", each
// key the engine ignores is logged; returns nothing when the engine must not start.
// `lookup`: for Endpoint host names (the Linux frontend's); empty: names are refused.
std::optional<EngineFiles> load_engine_files(const std::string& program,
                                             const std::string& wg_config,
                                             const std::string& policy_config,
                                             const EndpointLookup& lookup = {});

// Starts the WireGuard helper, and again after each failure (250 ms, doubling to 10 s, each
// failure logged) until it runs or `stopping` is set (then: nothing). A helper that cannot
// start (its protect refused, a bad key the parser let through) keeps the engine waiting with
// no channel, never running without one.
std::optional<WgHelperProcess> start_helper(const WgHelperOptions& options,
                                            const std::string& uapi_set,
                                            const volatile sig_atomic_t& stopping);

class EngineRunner {
 public:
  // `loop` must outlive the runner; `helper` is the running first helper.
  EngineRunner(EngineLoop& loop, WgHelperOptions options, std::string uapi_set,
               WgHelperProcess helper);
  // The channel's health as last judged.
  core::ChannelHealth channel_health() const { return health_.state(); }

  // The control socket's answers: `status` (quicstepctl's vocabulary, engine_status.hpp, and
  // the loop's counters), `network-changed` (the frontend's system told it: Android's
  // ConnectivityManager; Linux uses rtnetlink and calls network_changed() itself).
  std::string answer(const std::string& request);
  // How the frontend gets a new descriptor of its TUN device when the device was deleted
  // under the engine (quicstep-tun: creates it again and sets its addresses and routes).
  // Called until it gives one or `stopping` is set (250 ms, doubling to 10 s). Without it
  // (Android: a TUN that VpnService took away is the app's to replace) the engine ends.
  using TunReopen = std::function<common::Result<net::UniqueFd, common::Failure>()>;
  void on_tun_gone(TunReopen reopen) { reopen_tun_ = std::move(reopen); }
  // What the frontend adds to `status` (quicstep-tun: its self-healing's "healing").
  void add_status(std::function<void(nlohmann::json&)> more) { more_status_ = std::move(more); }
  // Re-binds the relays of the changed families (the control socket's request: both) and
  // the helper's sockets on the current network.
  void network_changed(ChangedFamilies changed = {});
  // Runs the loop until `stopping` is set (a signal handler also calls loop.stop()) or the
  // engine itself fails. A dead helper is restarted (250 ms, doubling to 10 s), a deleted
  // TUN device replaced (on_tun_gone). Returns
  // the empty string after a stop, or why the engine ended.
  std::string run(const volatile sig_atomic_t& stopping);
  pid_t helper_pid() const { return helper_ ? helper_->pid() : -1; }

 private:
  EngineLoop& loop_;
  WgHelperOptions options_;
  std::string uapi_set_;
  std::optional<WgHelperProcess> helper_;
  std::function<void(nlohmann::json&)> more_status_;
  TunReopen reopen_tun_;
  // The channel's health: a `get=1` sent at one tick of the 1 s timer, its answer taken at
  // the next (the loop never waits for the helper).
  void on_health_tick();
  core::ChannelHealthJudge health_;
  net::UniqueFd health_timer_;
  common::Timestamp health_asked_ = common::Timestamp::never();
  std::string health_error_;  // the last reading's failure, logged once per change
  std::uint64_t helper_restarts_ = 0;
  std::uint64_t tun_recreated_ = 0;
};

}  // namespace quicstep::client::tun
