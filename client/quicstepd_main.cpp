// quicstepd: the QUICstep router daemon. See daemon.hpp. Exit codes: 0 clean exit,
// 1 start-up failed (nothing stays installed), 2 bad config or command line (nothing
// installed).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "client/daemon.hpp"
#include "client/nft_rules.hpp"
#include "client/routing.hpp"
#include "client/policy_config.hpp"
#include "quicstep_version.hpp"

int main(int argc, char** argv) {
  using namespace quicstep::client;
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
                 "the channel's WireGuard interface, instead of [daemon] channel_interface");
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
  if (cleanup) {
    std::string why = cleanup_everything(load.config);
    if (!why.empty()) spdlog::warn("cleanup: {}", why);
    spdlog::info("cleanup done");
    return 0;
  }
  {
    // Semantic checks across keys (marks, queues, interface name): a bad config too.
    RulesetSpec rules;
    RoutingSpec routing;
    if (std::string why = derive_specs(load.config, &rules, &routing); !why.empty()) {
      std::cerr << options.config_path << ":0: [daemon] " << why << "\nquicstepd: bad config, nothing installed\n";
      return 2;
    }
  }
  Daemon daemon(std::move(load.config), options);
  if (std::string why = daemon.start(); !why.empty()) {
    spdlog::error("start failed: {}", why);
    return 1;
  }
  return daemon.run();
}
