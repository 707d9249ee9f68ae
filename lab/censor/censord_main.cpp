// censord: the lab's censor. Runs in the censor router's namespace on one netfilter queue
// that sees the forwarded packets of both directions (mangle FORWARD, installed by
// lab/censor/censorctl), decides each with CensorCore, and:
//   pass -> accept unchanged;  drop -> accept with --drop-mark, which a filter FORWARD rule
//   drops (the nfqueue frontend, shared with quicstepd, sets marks, not NF_DROP);
//   inject -> raw sockets.
// Logs decisions as JSONL (--log) and its counters as JSON (--stats, every second and at
// exit). SIGTERM/SIGINT: clean exit (0). Exit codes: 1 start-up failed, 2 bad command line
// or blocklist file unreadable. Bad blocklist lines are reported and skipped.
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "lab/censor/censor_core.hpp"
#include "lab/censor/decision_log.hpp"
#include "lab/censor/raw_injector.hpp"
#include "net/clock.hpp"
#include "net/nfqueue_frontend.hpp"

namespace {

using namespace quicstep;
using censor::Action;

struct Options {
  censor::CensorConfig core;
  std::string blocklist_path;
  std::string log_path;
  std::string stats_path;
  std::uint16_t queue = 7;
  std::uint32_t drop_mark = 0xc3c3;
  std::uint64_t seed = 1;
  double residual_s = 180;
  std::string forge_v4 = "198.18.0.255";
  std::string forge_v6 = "2001:db8::dead";
  std::string log_level = "info";
};

// Wall-clock seconds of a monotonic Timestamp.
double wall_of(common::Timestamp t) {
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const double now_wall = std::chrono::duration<double>(wall).count();
  return now_wall - std::chrono::duration<double>(net::monotonic_now() - t).count();
}

int parse(int argc, char** argv, Options& o) {
  CLI::App app{"censord: the lab's GFW-like censor (QUIC SNI, TLS SNI, DNS) on an nfqueue"};
  bool no_tcp_drop = false, no_dns = false;
  app.add_option("-b,--blocklist", o.blocklist_path, "blocklist file (name, *.name, .name)")->required();
  app.add_option("-q,--queue", o.queue, "netfilter queue number")->capture_default_str();
  app.add_option("--drop-mark", o.drop_mark, "mark that the DROP rule matches")->capture_default_str();
  app.add_option("--log", o.log_path, "decision log (JSONL, appended)");
  app.add_option("--stats", o.stats_path, "counters (JSON, rewritten every second)");
  app.add_option("--residual", o.residual_s, "residual blocking period, seconds (0: off)")
      ->check(CLI::Range(0.0, 86400.0))->capture_default_str();
  app.add_option("--probability", o.core.block_probability, "block probability per flow")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the probability coin")->capture_default_str();
  app.add_option("--quic-port", o.core.quic_ports, "UDP ports read as QUIC")->capture_default_str();
  app.add_flag("--first-datagram-only", o.core.first_datagram_only,
               "GFW-faithful: read the ClientHello from the first Initial datagram only");
  app.add_flag("--strict-all-quic", o.core.block_all_quic, "strict: block every QUIC flow");
  app.add_flag("--strict-short-header", o.core.block_short_header_first,
               "strict: block QUIC-port flows whose first packet seen is a short header");
  app.add_flag("--block-wireguard", o.core.block_wireguard,
               "block UDP flows that carry a WireGuard handshake (any port), by its fingerprint");
  app.add_flag("--no-tcp-drop", no_tcp_drop, "TCP: inject RSTs only, do not drop the flow");
  app.add_flag("--no-dns-forgery", no_dns, "do not forge DNS answers");
  app.add_option("--forge-v4", o.forge_v4, "address in forged A answers")->check(CLI::ValidIPV4)
      ->capture_default_str();
  app.add_option("--forge-v6", o.forge_v6, "address in forged AAAA answers")->capture_default_str();
  app.add_option("--max-flows", o.core.max_flows, "flows tracked")->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  o.core.tcp_drop = !no_tcp_drop;
  o.core.dns_forge = !no_dns;
  o.core.residual_period = std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(o.residual_s));
  if (inet_pton(AF_INET, o.forge_v4.c_str(), o.core.forged.v4.data()) != 1 ||
      inet_pton(AF_INET6, o.forge_v6.c_str(), o.core.forged.v6.data()) != 1) {
    std::cerr << "censord: --forge-v4/--forge-v6: not an address: `" << o.forge_v4 << "', `" << o.forge_v6 << "'\n";
    return 2;
  }
  return -1;
}

// The signals that end the loop, read through a signalfd (blocked for the process).
int stop_signal_fd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

class Censord {
 public:
  Censord(const Options& o, censor::Blocklist blocklist)
      : o_(o), core_(o.core, std::move(blocklist), o.seed) {}

  common::Outcome start() {
    if (auto opened = log_.open(o_.log_path); !opened) return opened;
    if (auto opened = injector_.open(); !opened) return opened;
    net::NfqueueOptions q;
    q.queue = o_.queue;
    return queue_.open(q);
  }

  int run(int stop_fd) {
    pollfd fds[2] = {{queue_.fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
    auto next_tick = net::monotonic_now();
    const auto decide = [this](const net::QueuedPacket& p) { return on_packet(p); };
    while (true) {
      const int n = poll(fds, 2, 200);
      if (n < 0 && errno != EINTR) {
        spdlog::error("poll: {}", strerror(errno));
        return 1;
      }
      if (fds[1].revents & POLLIN) break;
      if (fds[0].revents & POLLIN) queue_.drain(decide, net::monotonic_now());
      flush_decisions();
      if (net::monotonic_now() >= next_tick) {
        core_.on_expiry(net::monotonic_now());
        write_stats();
        next_tick = net::monotonic_now() + std::chrono::seconds(1);
      }
    }
    flush_decisions();
    write_stats();
    spdlog::info("censord: stopped after {} packets ({} dropped, {} injected)", core_.counters().packets,
                 core_.counters().dropped, injector_.sent());
    return 0;
  }

 private:
  std::optional<std::uint32_t> on_packet(const net::QueuedPacket& p) {
    censor::Verdict v = core_.decide(p.payload, net::monotonic_now());
    for (const auto& packet : v.inject) injector_.send(packet);
    if (v.action == Action::drop || v.action == Action::drop_and_inject) return o_.drop_mark;
    return std::nullopt;
  }

  void flush_decisions() {
    for (const auto& r : core_.take_decisions()) {
      auto line = censor::decision_to_json(r, wall_of(r.time));
      spdlog::info("decision: {}", line.dump());
      log_.write(line);
    }
  }

  void write_stats() {
    if (o_.stats_path.empty()) return;
    auto j = censor::counters_to_json(core_);
    const auto& q = queue_.stats();
    j["nfqueue"] = {{"packets", q.packets}, {"enobufs", q.enobufs}, {"bad_messages", q.bad_messages},
                    {"verdict_errors", q.verdict_errors}};
    j["inject"] = {{"sent", injector_.sent()}, {"errors", injector_.errors()}};
    j["log_errors"] = log_.errors();
    j["pid"] = getpid();
    if (!censor::write_json_file(o_.stats_path, j)) spdlog::warn("cannot write {}", o_.stats_path);
  }

  const Options& o_;
  censor::CensorCore core_;
  net::NfqueueFrontend queue_;
  censor::RawInjector injector_;
  censor::DecisionLog log_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse(argc, argv, o); rc >= 0) return rc;
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  censor::Blocklist blocklist;
  auto problems = censor::load_blocklist_file(o.blocklist_path, blocklist);
  for (const auto& p : problems) {
    if (p.line == 0) {
      std::cerr << "censord: " << p.message << "\n";
      return 2;
    }
    spdlog::warn("blocklist: {} (line skipped)", p.message);
  }
  spdlog::info("censord: {} blocklist rules, queue {}, residual {} s, probability {}{}{}{}{}",
               blocklist.size(), o.queue, o.residual_s, o.core.block_probability,
               o.core.first_datagram_only ? ", first datagram only" : "",
               o.core.block_all_quic ? ", strict: all QUIC" : "",
               o.core.block_short_header_first ? ", strict: short header first" : "",
               o.core.block_wireguard ? ", WireGuard blocked" : "");
  const int stop_fd = stop_signal_fd();
  if (stop_fd < 0) {
    spdlog::error("signalfd: {}", strerror(errno));
    return 1;
  }
  Censord censord(o, std::move(blocklist));
  if (auto started = censord.start(); !started) {
    spdlog::error("start failed: {}", started.error().message);
    return 1;
  }
  const int rc = censord.run(stop_fd);
  close(stop_fd);
  return rc;
}
