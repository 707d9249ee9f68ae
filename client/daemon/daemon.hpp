// Daemon: quicstepd's event loop (Boost.Asio, one thread). Attaches the channel, then the
// native path it chooses once (native_path.hpp: the queue path or the routed path, each of
// which installs policy routing and the nft table in the order its invariant needs), and
// removes it all in reverse order (RAII members, destroyed in reverse). Serves one loop:
// the native path's sources (the queues, or the channel's copies and the socket watch), then
// the classifier's events, which the native path turns into kernel changes; the classifier's
// and the path's timers; the devices (a re-created channel gets its rules again);
// SIGTERM/SIGINT (clean exit), SIGHUP (reload); the control socket (status JSON) and the
// Prometheus endpoint.
#pragma once

#include <memory>
#include <string>

#include "client/core/policy_config.hpp"
#include "common/error.hpp"

namespace quicstep::client::daemon {

struct DaemonOptions {
  std::string config_path;                               // for SIGHUP reloads
  // Absent file = the defaults (the default path when --config is not given); a path named
  // on the command line must exist.
  bool config_optional = false;
  // The command line's values of [daemon] channel_interface and wg_config ("" = the file's),
  // applied at start and at every reload: the template unit quicstepd@IFACE sets both.
  std::string channel_interface;
  std::string wg_config;
  std::string control_path = "/run/quicstep/control.sock";
  std::string state_dir = "/run/quicstep";
};

// The config quicstepd runs with: options.config_path (or the defaults, where it is optional
// and absent), then the command line's [daemon] values. Errors: as load_config's.
core::ConfigLoad load_daemon_config(const DaemonOptions& options);

class Daemon {
 public:
  Daemon(core::Config config, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Installs everything; the failure says why it could not (then nothing stays installed).
  common::Outcome start();
  // Runs until SIGTERM/SIGINT; returns the exit code (0).
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `quicstepd --cleanup`: removes the queue rules, the nft table and the ip rules that a
// daemon with this config would have installed. The failure names what did not go.
common::Outcome cleanup_everything(const core::Config& config);

}  // namespace quicstep::client::daemon
