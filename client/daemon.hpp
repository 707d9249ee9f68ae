// Daemon: quicstepd's event loop (Boost.Asio, one thread). Installs the kernel half in a
// fixed order — policy routing, then the nft table, then the queue rules — after opening
// the queues, and removes it in reverse order (RAII members, destroyed in reverse). Serves:
// the outbound queue (short headers the kernel could not decide: classifier -> native mark
// or unchanged = channel), the inbound watch queue (answers on the native path confirm a
// migration), the classifier's expiry timer, SIGTERM/SIGINT (clean exit), SIGHUP (reload),
// the control socket (status JSON) and the Prometheus endpoint. With native_path = "routed"
// (RoutedPath, routed_path.hpp) it opens no queue: the guard first, then the routing rules,
// the nflog listener and the netdev table; it serves the channel's copies instead and writes
// per-flow ip rules.
#pragma once

#include <memory>
#include <string>

#include "client/policy_config.hpp"

namespace quicstep::client {

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

// The values derived from the config that the kernel half needs (unit-tested through
// nft_rules). Errors: text, empty when fine.
struct RulesetSpec;
struct RoutingSpec;
std::string derive_specs(const Config& config, RulesetSpec* rules, RoutingSpec* routing);

// The config quicstepd runs with: options.config_path (or the defaults, where it is optional
// and absent), then the command line's [daemon] values. Errors: as load_config's.
ConfigLoad load_daemon_config(const DaemonOptions& options);

class Daemon {
 public:
  Daemon(Config config, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Installs everything; returns "" or why it could not (then nothing stays installed).
  std::string start();
  // Runs until SIGTERM/SIGINT; returns the exit code (0).
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `quicstepd --cleanup`: removes the queue rules, the nft table and the ip rules that a
// daemon with this config would have installed. Returns "" or what failed.
std::string cleanup_everything(const Config& config);

}  // namespace quicstep::client
