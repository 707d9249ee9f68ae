// quicstep-server: an HTTP/3 server of N workers on SO_REUSEPORT sockets, with worker-encoding
// connection IDs, optional SK_REUSEPORT steering by DCID, host Retry, and a chosen migration
// behaviour. Counters go to a JSON file every second (--stats-file) and to stdout at exit.
#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "net/clock.hpp"
#include "net/socket_endpoint.hpp"
#include "server_testbed/gate_forward.hpp"
#include "server_testbed/gate_map_share.hpp"
#include "server_testbed/stats_file.hpp"
#include "server_testbed/steering_loader.hpp"
#include "server_testbed/token/master_key.hpp"
#include "server_testbed/worker.hpp"

namespace qs = quicstep::server_testbed;
namespace common = quicstep::common;

namespace {

// "198.18.210.10:443" or "[2001:db8:210::10]:443" (port 443 when omitted); the failure quotes
// the value.
common::Outcome parse_endpoint(const std::string& text, sockaddr_storage* out) {
  const auto endpoint = quicstep::net::parse_endpoint(text, 443);
  if (!endpoint) {
    return common::Failure("--listen: not address[:port] or [v6-address][:port] (port 1-65535): `" +
                           text + "'");
  }
  *out = *endpoint;
  return {};
}

nlohmann::json stats_json(const qs::ServerConfig& cfg, const std::vector<std::unique_ptr<qs::Worker>>& workers,
                          const qs::Steering* steering) {
  nlohmann::json j;
  j["migration"] = std::string(qs::to_string(cfg.migration));
  j["retry"] = cfg.retry;
  j["gate"] = cfg.gate_name;
  j["steering"] = steering != nullptr;
  j["workers"] = nlohmann::json::array();
  std::uint64_t owned = 0, misdirected = 0;
  for (const auto& w : workers) {
    j["workers"].push_back(w->stats_json());
    owned += w->counters().owned.load();
    misdirected += w->counters().misdirected.load();
  }
  j["total"] = {{"owned", owned}, {"misdirected", misdirected}};
  if (steering) {
    const qs_steer_counters c = steering->counters();
    j["bpf"] = {{"packets", c.packets},     {"steered", c.steered},
                {"fallback", c.fallback},   {"malformed", c.malformed},
                {"select_failed", c.select_failed}, {"disabled", c.disabled},
                {"gate", c.gate}, {"gate_absent", c.gate_absent}, {"allowlisted", c.allowlisted}};
  }
  return j;
}

// Options that need checking beyond CLI11's: filled by parse_command_line.
struct RawOptions {
  std::string listen = "198.18.210.10:443";
  std::string migration = "full";
  std::string key_hex;
  unsigned cid_len = 16;
  unsigned config_id = 0;
  bool no_steering = false;
  std::string master_key_file;
  double retry_token_lifetime_s = 10;
  double new_token_lifetime_s = 3600;
  double key_period_s = 3600;
};

void add_options(CLI::App& app, qs::ServerConfig& cfg, RawOptions& raw) {
  app.add_option("--listen", raw.listen, "address:port or [address]:port every worker binds");
  app.add_option("--workers", cfg.workers, "worker threads/sockets (1-64)")->check(CLI::Range(1, 64));
  app.add_flag("--pin", cfg.pin, "pin worker i to CPU i % ncpu");
  app.add_flag("--no-steering", raw.no_steering, "do not attach the SK_REUSEPORT program");
  app.add_flag("--retry", cfg.retry, "host Retry: validate every client address first");
  app.add_option("--migration", raw.migration, "full | port-only | none | stale-path");
  app.add_option("--cid-len", raw.cid_len, "issued CID length (4-20; 10-20 with --cid-key)")
      ->check(CLI::Range(4, 20));
  app.add_option("--cid-config-id", raw.config_id, "CID config rotation bits (0-2)")
      ->check(CLI::Range(0, 2));
  app.add_option("--cid-key", raw.key_hex, "obfuscate worker ids with this 64-bit key (16 hex digits)");
  app.add_option("--cert", cfg.cert_file, "PEM certificate")->required();
  app.add_option("--key", cfg.key_file, "PEM private key")->required();
  app.add_option("--htdocs", cfg.htdocs, "directory to serve (besides /bytes/N)");
  app.add_option("--qlog-dir", cfg.qlog_dir,
                 "write a qlog per connection there (ngtcp2's JSON-SEQ, named by its DCID)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--think-ms", cfg.think_ms,
                 "each response waits this long after its request (a server computing it)")
      ->check(CLI::Range(0, 60'000));
  app.add_flag("--unpaced-first-flight", cfg.unpaced_first_flight,
               "do not pace a flight sent before the path's first RTT sample (after an "
               "address change ngtcp2 would pace it at its 333 ms initial RTT)");
  app.add_option("--max-body", cfg.max_body, "largest body served, bytes");
  app.add_option("--idle-timeout-ms", cfg.idle_timeout_ms, "QUIC idle timeout");
  app.add_option("--max-connections", cfg.max_connections, "per worker");
  app.add_option("--stats-file", cfg.stats_file, "JSON counters, rewritten every second");
  app.add_option("--duration", cfg.duration_s, "exit after this many seconds (0: on signal)");
  app.add_option("--gate", cfg.gate_name,
                 "quicstep-gate NAME in front: Initials go to its socket (README: Retry gate)");
  app.add_option("--master-key", raw.master_key_file,
                 "universal-token master key file (>= 32 octets); needed with --gate");
  app.add_option("--retry-token-lifetime", raw.retry_token_lifetime_s, "seconds")
      ->check(CLI::Range(0.001, 3600.0));
  app.add_option("--new-token-lifetime", raw.new_token_lifetime_s, "seconds (<= key period)")
      ->check(CLI::Range(0.001, 86400.0 * 30));
  app.add_option("--key-period", raw.key_period_s, "token key rotation period, seconds")
      ->check(CLI::Range(1.0, 86400.0 * 30));
}

// Completes cfg from raw; the failure quotes the bad value.
common::Outcome finish_config(const RawOptions& raw, qs::ServerConfig& cfg) {
  if (auto parsed = parse_endpoint(raw.listen, &cfg.listen); !parsed) return parsed;
  cfg.listen_len = quicstep::net::sockaddr_len(cfg.listen);
  const auto policy = qs::parse_migration_policy(raw.migration);
  if (!policy) {
    return common::Failure("--migration is not full|port-only|none|stale-path: `" + raw.migration +
                           "'");
  }
  cfg.migration = *policy;
  cfg.token.retry_lifetime_ms = static_cast<std::uint64_t>(raw.retry_token_lifetime_s * 1000);
  cfg.token.new_token_lifetime_ms = static_cast<std::uint64_t>(raw.new_token_lifetime_s * 1000);
  cfg.token.key_period_ms = static_cast<std::uint64_t>(raw.key_period_s * 1000);
  if (!cfg.gate_name.empty()) {
    if (!qs::valid_gate_name(cfg.gate_name)) {
      return common::Failure("--gate: not 1-32 letters, digits, - or _: `" + cfg.gate_name + "'");
    }
    if (raw.master_key_file.empty()) {
      return common::Failure(
          "--gate needs --master-key FILE (the gate verifies the workers' tokens)");
    }
    if (raw.no_steering) {
      return common::Failure("--gate needs the steering program (drop --no-steering)");
    }
  }
  if (!raw.master_key_file.empty()) {
    auto key = qs::token::load_master_key(raw.master_key_file);
    if (!key) return key.error();
    cfg.master_key = std::move(*key);
  } else {
    cfg.master_key.resize(qs::token::kMasterKeyMin);
    gnutls_rnd(GNUTLS_RND_KEY, cfg.master_key.data(), cfg.master_key.size());
  }
  cfg.steering = !raw.no_steering;
  cfg.cid.cid_len = static_cast<std::uint8_t>(raw.cid_len);
  cfg.cid.config_id = static_cast<std::uint8_t>(raw.config_id);
  cfg.cid.worker_count = cfg.workers;
  if (!raw.key_hex.empty()) {
    const std::string& hex = raw.key_hex;
    std::uint64_t key = 0;
    const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), key, 16);
    if (ec != std::errc() || end != hex.data() + hex.size() || hex.size() != 16) {
      return common::Failure("--cid-key is not 16 hex digits: `" + hex + "'");
    }
    cfg.cid.key = key;
  }
  return {};
}

// Loads the program, fills its config and sockarray, attaches it to the group.
common::Result<std::unique_ptr<qs::Steering>, common::Failure> start_steering(
    const qs::ServerConfig& cfg, const std::vector<std::unique_ptr<qs::Worker>>& workers) {
  auto loaded = qs::Steering::open();
  if (!loaded) return loaded.error();
  std::unique_ptr<qs::Steering> steering = std::move(*loaded);
  qs_steer_config bpf_cfg = qs::to_bpf_config(cfg.cid, true);
  bpf_cfg.gate = cfg.gate_name.empty() ? 0 : 1;
  bool ok = static_cast<bool>(steering->set_config(bpf_cfg));
  for (std::uint32_t i = 0; ok && i < cfg.workers; ++i) {
    ok = static_cast<bool>(steering->add_socket(i, workers[i]->fd()));
  }
  ok = ok && static_cast<bool>(steering->attach(workers[0]->fd()));
  if (!ok) return common::Failure(std::strerror(errno));
  return steering;
}

// Gate mode: serves the maps to quicstep-gate and gives each worker its unix datagram
// socket for forwarded Initials.
qs::MapShare::Started start_gate_side(const qs::ServerConfig& cfg, qs::Steering& steering,
                                      const std::vector<std::unique_ptr<qs::Worker>>& workers) {
  const std::string dir = qs::gate_run_dir(cfg.gate_name);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return common::Failure(dir + ": " + std::strerror(errno));
  }
  for (std::uint32_t i = 0; i < workers.size(); ++i) {
    const std::string path = qs::gate_worker_socket(cfg.gate_name, i);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
      return common::Failure(path + ": path too long");
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    unlink(path.c_str());
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      common::Failure failure(path + ": " + std::strerror(errno));
      if (fd >= 0) close(fd);
      return failure;
    }
    const int rcvbuf = 4 << 20;  // the bounded queue: beyond it the gate counts queue_full
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    workers[i]->attach_gate_socket(fd);
  }
  // The real bound of each forwarding queue is the namespace's unix datagram queue length
  // (default 10), not SO_RCVBUF: say so when it is small.
  std::ifstream qlen_file("/proc/sys/net/unix/max_dgram_qlen");
  unsigned qlen = 0;
  if (qlen_file >> qlen && qlen < 256) {
    std::cerr << "quicstep-server: note: net.unix.max_dgram_qlen is " << qlen
              << ": each worker's queue of forwarded Initials holds that many; raise it in"
                 " this namespace (sysctl -w net.unix.max_dgram_qlen=1024) for bursts\n";
  }
  return qs::MapShare::start(
      qs::gate_maps_socket(cfg.gate_name),
      {steering.sockets_map_fd(), steering.config_map_fd(), steering.allow_map_fd()});
}

void stop_gate_side(const qs::ServerConfig& cfg, std::uint32_t workers) {
  for (std::uint32_t i = 0; i < workers; ++i) unlink(qs::gate_worker_socket(cfg.gate_name, i).c_str());
  rmdir(qs::gate_run_dir(cfg.gate_name).c_str());
}

// Writes the stats every second until SIGINT/SIGTERM or the duration ends.
void wait_for_stop(const qs::ServerConfig& cfg, const sigset_t& stop_signals,
                   const std::vector<std::unique_ptr<qs::Worker>>& workers,
                   const qs::Steering* steering) {
  const auto start = quicstep::net::monotonic_now();
  for (;;) {
    timespec one_second{1, 0};
    const int sig = sigtimedwait(&stop_signals, nullptr, &one_second);
    qs::write_stats(cfg.stats_file, stats_json(cfg, workers, steering));
    if (sig == SIGINT || sig == SIGTERM) return;
    if (cfg.duration_s > 0 &&
        quicstep::net::monotonic_now() - start >= std::chrono::seconds(cfg.duration_s)) {
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-server: HTTP/3 test server cluster with CID steering"};
  qs::ServerConfig cfg;
  RawOptions raw;
  add_options(app, cfg, raw);
  CLI11_PARSE(app, argc, argv);
  if (auto finished = finish_config(raw, cfg); !finished) {
    std::cerr << "quicstep-server: " << finished.error().message << "\n";
    return 2;
  }
  auto codec = qs::CidCodec::create(cfg.cid);
  if (!codec) {
    std::cerr << "quicstep-server: bad CID config (--cid-len " << raw.cid_len
              << "; obfuscation needs >= 10)\n";
    return 2;
  }
  auto loaded_tls = qs::TlsContext::load(cfg.cert_file, cfg.key_file);
  if (!loaded_tls) {
    std::cerr << "quicstep-server: " << loaded_tls.error().message << "\n";
    return 1;
  }
  std::unique_ptr<qs::TlsContext> tls = std::move(*loaded_tls);
  qs::StaticSecret secret{};
  gnutls_rnd(GNUTLS_RND_KEY, secret.data(), secret.size());

  // Block the stop signals in every thread; main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::vector<std::unique_ptr<qs::Worker>> workers;
  for (std::uint32_t i = 0; i < cfg.workers; ++i) {
    auto sock = quicstep::net::UdpSocket::open_reuseport(cfg.listen, cfg.listen_len);
    if (!sock) {
      std::cerr << "quicstep-server: " << quicstep::net::to_string(cfg.listen) << ": "
                << sock.error().message << "\n";
      return 1;
    }
    workers.push_back(std::make_unique<qs::Worker>(i, cfg, *codec, *tls, secret, std::move(*sock)));
  }
  std::unique_ptr<qs::Steering> steering;
  if (cfg.steering) {
    auto started = start_steering(cfg, workers);
    if (!started) {
      std::cerr << "quicstep-server: steering program: " << started.error().message << "\n";
      return 1;
    }
    steering = std::move(*started);
  }
  std::unique_ptr<qs::MapShare> map_share;
  if (!cfg.gate_name.empty()) {
    auto started = start_gate_side(cfg, *steering, workers);
    if (!started) {
      std::cerr << "quicstep-server: --gate " << cfg.gate_name << ": " << started.error().message
                << "\n";
      stop_gate_side(cfg, cfg.workers);
      return 1;
    }
    map_share = std::move(*started);
  }

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const unsigned ncpu = std::max(1u, std::thread::hardware_concurrency());
  for (std::uint32_t i = 0; i < cfg.workers; ++i) {
    threads.emplace_back([&, i] { workers[i]->run(stop); });
    if (cfg.pin) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(i % ncpu, &set);
      pthread_setaffinity_np(threads.back().native_handle(), sizeof(set), &set);
    }
  }
  std::cerr << "quicstep-server: " << cfg.workers << " workers on " << quicstep::net::to_string(cfg.listen)
            << ", steering " << (steering ? "on" : "off") << ", migration " << raw.migration
            << ", retry " << (cfg.retry ? "on" : "off") << ", gate "
            << (cfg.gate_name.empty() ? "none" : cfg.gate_name) << "\n";
  wait_for_stop(cfg, stop_signals, workers, steering.get());
  stop = true;
  for (auto& t : threads) t.join();
  map_share.reset();
  if (!cfg.gate_name.empty()) stop_gate_side(cfg, cfg.workers);
  const auto final_stats = stats_json(cfg, workers, steering.get());
  qs::write_stats(cfg.stats_file, final_stats);
  std::cout << final_stats.dump() << std::endl;
  return 0;
}
