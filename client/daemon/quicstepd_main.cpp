// quicstepd: the QUICstep router daemon. See daemon.hpp. Exit codes: 0 clean exit,
// 1 start-up failed (nothing stays installed), 2 bad config or command line (nothing
// installed).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "client/core/policy_config.hpp"
#include "client/daemon/daemon.hpp"
#include "client/daemon/specs.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/routing.hpp"
#include "net/namespace_lock.hpp"
#include "quicstep_version.hpp"

int main(int argc, char** argv) {
  using quicstep::client::core::ConfigLoad;
  using quicstep::client::daemon::load_daemon_config;
  using quicstep::client::daemon::cleanup_everything;
  using quicstep::client::daemon::Daemon;
  using quicstep::client::daemon::DaemonOptions;
  using quicstep::client::daemon::derive_specs;
  using quicstep::client::kernel::RoutingSpec;
  using quicstep::client::kernel::RulesetSpec;
  CLI::App app{"quicstepd: QUIC handshakes through the channel, QUIC data on the native path"};
  app.set_version_flag("--version", std::string("quicstepd ") + quicstep::kVersion);
  std::string log_level = "info";
  bool cleanup = false;
  DaemonOptions options;
  options.config_path = "/etc/quicstep/quicstepd.toml";
  auto* config_option = app.add_option(
      "-c,--config", options.config_path,
      "TOML config file (default /etc/quicstep/quicstepd.toml, or the defaults where it is absent)");
  app.add_option("--channel-interface", options.channel_interface,
                 "the channel's interface, instead of [daemon] channel_interface");
  app.add_option("--wg-config", options.wg_config,
                 "wg-quick config to bring the channel up from, instead of [daemon] wg_config");
  app.add_flag("--cleanup", cleanup, "remove rules, routes and channel left by a crash, exit");
  // No --foreground: quicstepd never daemonizes (systemd Type=notify, or `&` in a shell).
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_option("--control", options.control_path, "control socket path");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  options.config_optional = config_option->count() == 0;
  ConfigLoad load = load_daemon_config(options);
  if (!load.ok()) {
    for (const auto& e : load.errors) std::cerr << e.to_string() << "\n";
    std::cerr << "quicstepd: bad config, nothing installed\n";
    return 2;
  }
  // One quicstepd per network namespace (net/namespace_lock.hpp): a second one's start, or
  // its --cleanup, would take the running one's rules away under it.
  const auto lock = quicstep::net::NamespaceLock::acquire("quicstep/quicstepd");
  if (!lock) {
    std::cerr << "quicstepd: another quicstepd runs in this network namespace ("
              << lock.error().message << "); "
              << (cleanup ? "it removes what it installed when it stops; nothing removed\n"
                          : "stop it first; nothing installed\n");
    return 1;
  }
  if (cleanup) {
    if (auto removed = cleanup_everything(load.config); !removed) {
      spdlog::warn("cleanup: {}", removed.error().message);
    }
    spdlog::info("cleanup done");
    return 0;
  }
  {
    // Semantic checks across keys (marks, queues, interface name): a bad config too.
    RulesetSpec rules;
    RoutingSpec routing;
    if (auto derived = derive_specs(load.config, &rules, &routing); !derived) {
      std::cerr << options.config_path << ":0: [daemon] " << derived.error().message
                << "\nquicstepd: bad config, nothing installed\n";
      return 2;
    }
  }
  Daemon daemon(std::move(load.config), options);
  if (auto started = daemon.start(); !started) {
    spdlog::error("start failed: {}", started.error().message);
    return 1;
  }
  return daemon.run();
}
