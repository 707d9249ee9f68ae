// qs-engine: the TUN engine as the Android app runs it (client/android/README.md, "At run
// time"; shipped as jniLibs/<abi>/libqsengine.so). It creates nothing in the system: the
// app's VpnService owns the TUN and its routes and sends the TUN's descriptor over
// --tun-socket; every socket the engine and its WireGuard helper open goes to the app's
// --protect-socket before it sends anything (VpnService.protect). No thread is started
// (Android's seccomp filter traps what glibc's threads call in a static program) and no
// name is looked up (the app resolves the endpoints). On Linux the same binary runs in the
// lab with a TUN and a protect server standing in for the app (tests/tun).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "client/tun/io/engine_loop.hpp"
#include "client/tun/io/engine_runner.hpp"
#include "client/tun/io/fd_exchange.hpp"
#include "client/tun/io/protector.hpp"
#include "client/tun/io/wg_helper_process.hpp"
#include "quicstep_version.hpp"

namespace {

using namespace quicstep::client;

struct Options {
  std::string tun_socket;
  std::string protect_socket;
  std::string control_socket;
  std::string wg_config;
  std::string config;
  std::string helper;
  std::string helper_log;
  bool no_offload = false;
};

tun::EngineLoop* g_loop = nullptr;
volatile sig_atomic_t g_stopping = 0;

void on_signal(int) {
  g_stopping = 1;
  if (g_loop != nullptr) g_loop->stop();
}

// The helper beside this executable: libqswg.so in the app's nativeLibraryDir, or the
// build tree's qs-wg-helper.
std::string default_helper() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "libqswg.so";
  self[n] = '\0';
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  for (const std::string& candidate : {dir + "/libqswg.so", dir + "/qs-wg-helper"}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return dir + "/libqswg.so";
}

void cleanup_sockets(const Options& o) {
  unlink(o.tun_socket.c_str());
  if (!o.control_socket.empty()) unlink(o.control_socket.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"qs-engine: QUICstep's TUN engine for a VPN app (the TUN and protect() come "
               "from the app over unix sockets)"};
  app.set_version_flag("--version", std::string("qs-engine ") + quicstep::kVersion);
  app.add_option("--tun-socket", o.tun_socket,
                 "listen here for the TUN descriptor (one byte, SCM_RIGHTS; answered 0)")
      ->required();
  app.add_option("--protect-socket", o.protect_socket,
                 "send each own socket here to be protected before use (protect_path)")
      ->required();
  app.add_option("--wg-config", o.wg_config, "the channel's wg-quick file (numeric endpoints)")
      ->required();
  app.add_option("--control-socket", o.control_socket,
                 "status socket (quicstepctl's protocol; also `network-changed`)");
  app.add_option("--config", o.config, "quicstepd.toml: the classifier's policy (defaults if absent)");
  app.add_option("--wg-helper", o.helper, "the WireGuard helper (default: libqswg.so beside this)");
  app.add_option("--helper-log", o.helper_log, "append the helper's stderr to this file");
  app.add_flag("--no-offload", o.no_offload,
               "one datagram per relay read and send (no UDP_GRO or UDP_SEGMENT)");
  CLI11_PARSE(app, argc, argv);
  if (o.helper.empty()) o.helper = default_helper();

  const std::optional<tun::EngineFiles> files =
      tun::load_engine_files("qs-engine", o.wg_config, o.config);
  if (!files) return 2;

  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The TUN first: without it there is nothing to do, and the app retries its send until
  // this socket listens.
  auto listener = tun::listen_unix(o.tun_socket);
  if (!listener.ok()) {
    std::fprintf(stderr, "qs-engine: %s\n", listener.error().message.c_str());
    return 1;
  }
  spdlog::info("qs-engine {}: waiting for the TUN on {}", quicstep::kVersion, o.tun_socket);
  auto tun_fd = tun::receive_fd(listener->get(), std::chrono::seconds(5), [] { return !g_stopping; });
  listener->reset();
  if (!tun_fd.ok()) {
    cleanup_sockets(o);
    if (g_stopping) return 0;
    std::fprintf(stderr, "qs-engine: waiting for the TUN: %s\n", tun_fd.error().message.c_str());
    return 1;
  }

  const tun::WgHelperOptions helper_options{
      o.helper, {"--protect-socket", o.protect_socket}, files->mtu, o.helper_log};
  std::optional<tun::WgHelperProcess> started =
      tun::start_helper(helper_options, files->uapi_set, g_stopping);
  if (!started) {
    cleanup_sockets(o);
    return 0;
  }
  tun::SocketProtector protector(o.protect_socket);
  tun::EngineLoop loop(files->engine, std::move(*tun_fd), started->take_packets(), protector,
                       std::random_device{}() | std::uint64_t{std::random_device{}()} << 32);
  // VpnService's TUN has no virtio header: the relays' offloads only.
  loop.use_tun_format({.vnet_header = false, .udp_gso = false, .relay_gro = !o.no_offload,
                       .relay_gso = !o.no_offload});
  tun::EngineRunner runner(loop, helper_options, files->uapi_set, std::move(*started));
  if (!o.control_socket.empty()) {
    if (auto control = tun::listen_unix(o.control_socket); control.ok()) {
      loop.serve_control(std::move(*control),
                         [&runner](const std::string& request) { return runner.answer(request); });
    } else {
      spdlog::warn("control socket: {}; status unavailable", control.error().message);
    }
  }
  g_loop = &loop;
  spdlog::info("qs-engine: TUN received, WireGuard helper pid {}, sockets protected by {}",
               runner.helper_pid(), protector.describe());
  const std::string ended = runner.run(g_stopping);
  g_loop = nullptr;
  cleanup_sockets(o);
  if (!ended.empty()) {
    // The app's supervisor starts a new engine and sends it the TUN again; until then the
    // TUN is the app's and nobody reads it: no traffic, no leak.
    spdlog::error("engine: {}", ended);
    return 1;
  }
  spdlog::info("qs-engine: stopped");
  return 0;
}
