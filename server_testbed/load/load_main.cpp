// quicstep-load: C concurrent HTTP/3 connections to quicstep-server (or any h3 server that
// serves /bytes/N), each migrating mid-transfer; per-connection results and a summary as JSON.
// Test tool: the server certificate is not verified.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/deadline_heap.hpp"
#include "quic/time.hpp"
#include "server_testbed/load/load_connection.hpp"

namespace qs = quicstep::server_testbed;

namespace {

// --barrier-signal: SIGUSR1 releases the held connections (several load processes migrate
// together: each has its own descriptor limit, and the bench signals them all at once).
volatile std::sig_atomic_t g_release = 0;
void on_release(int) { g_release = 1; }

bool parse_addr(const std::string& text, std::uint16_t port, sockaddr_storage* out) {
  *out = {};
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (inet_pton(AF_INET, text.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(out, &v4, sizeof(v4));
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    std::memcpy(out, &v6, sizeof(v6));
    return true;
  }
  return false;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void watch(int ep, int fd, std::size_t index) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = (static_cast<std::uint64_t>(index) << 32) | static_cast<std::uint32_t>(fd);
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

constexpr std::size_t kMigrateBatch = 256;  // migrations per wake-up during the barrier

struct RunInfo {
  std::size_t held_at_barrier = 0;   // hold mode: connections open and stalled, migrated together
  double barrier_at_ms = -1;         // since the first start
  double barrier_spread_ms = -1;     // first to last migration of the barrier
  std::size_t max_open = 0;          // connections open at the same time, at most
};

// Starts the connections (all at once, or open-loop at `rate` per second) and drives them
// until all finished or timeout_s passed. Hold mode: once every connection is held (or
// finished), or hold_wait_s after the last start, every held connection migrates in one pass.
// Deadlines live in a TimerQueue and the open/held counts are kept as connections change:
// no pass over all connections per wake-up (10,000 connections made that the bottleneck).
RunInfo run_all(const qs::LoadOptions& opt, gnutls_certificate_credentials_t cred,
                unsigned connections, double rate, unsigned timeout_s, double hold_wait_s,
                bool barrier_signal, double migrate_rate,
                std::vector<std::unique_ptr<qs::LoadConnection>>& conns,
                std::vector<std::string>& start_errors) {
  RunInfo info;
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  const ngtcp2_tstamp t0 = quicstep::quic::now();
  const ngtcp2_tstamp end = t0 + static_cast<ngtcp2_tstamp>(timeout_s) * NGTCP2_SECONDS;
  ngtcp2_tstamp last_start = t0;
  std::size_t started = 0, done = 0, open = 0, held = 0;
  bool barrier_done = !opt.hold, announced = false, migrating = false;
  std::size_t next_to_migrate = 0, migrated_so_far = 0;
  ngtcp2_tstamp barrier_first = 0;
  std::vector<epoll_event> events(1024);
  std::vector<bool> counted_held(connections, false);
  quicstep::common::DeadlineHeap<std::size_t> timers;
  // After every event of connection i: its deadline, a new socket, the counts.
  auto touched = [&](std::size_t i) {
    auto& c = conns[i];
    if (c->take_new_fd()) watch(ep, c->fd(), i);
    const bool now_held = !c->finished() && c->held();
    if (now_held != counted_held[i]) {
      counted_held[i] = now_held;
      now_held ? ++held : --held;
    }
    if (c->finished()) {
      ++done;
      --open;
      timers.erase(i);
      return;
    }
    timers.set(i, quicstep::quic::from_ngtcp2(c->next_deadline()));
  };
  while (done < connections && quicstep::quic::now() < end) {
    ngtcp2_tstamp now = quicstep::quic::now();
    while (started < connections &&
           (rate <= 0 || static_cast<double>(now - t0) / NGTCP2_SECONDS * rate >= static_cast<double>(started))) {
      if (auto connection = qs::LoadConnection::start(opt, cred, now); connection) {
        conns[started] = std::move(*connection);
      } else {
        start_errors[started] = connection.error().message;
      }
      if (conns[started]) {
        watch(ep, conns[started]->fd(), started);
        ++open;
        touched(started);
      } else {
        ++done;
      }
      ++started;
      last_start = now;
    }
    info.max_open = std::max(info.max_open, open);
    const ngtcp2_tstamp wake =
        migrating
            ? (migrate_rate > 0
                   ? std::min(quicstep::quic::to_ngtcp2(timers.next()), now + NGTCP2_MILLISECONDS)
                   : now)
            : std::min(quicstep::quic::to_ngtcp2(timers.next()), now + 10 * NGTCP2_MILLISECONDS);
    const int wait_ms = wake > now ? static_cast<int>((wake - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS) : 0;
    const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), wait_ms);
    now = quicstep::quic::now();
    for (int i = 0; i < n; ++i) {
      const std::size_t idx = events[i].data.u64 >> 32;
      auto& c = conns[idx];
      if (!c || c->finished()) continue;
      c->on_readable(static_cast<int>(events[i].data.u64 & 0xffffffffu), now);
      touched(idx);
    }
    for (std::size_t idx : timers.take_due(quicstep::quic::from_ngtcp2(now))) {
      conns[idx]->on_expiry(now);
      touched(idx);
    }
    const bool all_held = started == connections && held == open;
    const bool waited = started == connections &&
                        now - last_start > static_cast<ngtcp2_tstamp>(hold_wait_s * NGTCP2_SECONDS);
    const bool ready = held > 0 && (all_held || waited);
    if (barrier_signal && ready && !announced) {
      announced = true;  // tell the caller: {"held": n}, then wait for SIGUSR1
      std::cout << nlohmann::json{{"held", held}, {"open", open}}.dump() << std::endl;
    }
    if (!barrier_done && ready && (!barrier_signal || g_release)) {
      barrier_done = true;
      migrating = true;
      info.held_at_barrier = held;
      barrier_first = quicstep::quic::now();
      info.barrier_at_ms = static_cast<double>(barrier_first - t0) / NGTCP2_MILLISECONDS;
    }
    // The barrier migrates kMigrateBatch connections per wake-up and reads in between, so
    // that the first connections' transfers go on while the others migrate (handovers are
    // timed with the kernel's receive timestamps, so unread answers do not inflate them).
    // With --migrate-rate the barrier is paced instead: migration k starts k / rate seconds
    // after the release.
    std::size_t budget = kMigrateBatch;
    if (migrating && migrate_rate > 0) {
      const double due = static_cast<double>(quicstep::quic::now() - barrier_first) /
                             NGTCP2_SECONDS * migrate_rate +
                         1;
      budget = due > static_cast<double>(migrated_so_far)
                   ? std::min<std::size_t>(kMigrateBatch, static_cast<std::size_t>(due) - migrated_so_far)
                   : 0;
    }
    for (std::size_t k = 0; migrating && k < budget; ++next_to_migrate) {
      if (next_to_migrate >= started) {
        migrating = false;
        info.barrier_spread_ms =
            static_cast<double>(quicstep::quic::now() - barrier_first) / NGTCP2_MILLISECONDS;
        break;
      }
      auto& c = conns[next_to_migrate];
      if (!c || c->finished() || !c->held()) continue;
      c->migrate_now(quicstep::quic::now());
      touched(next_to_migrate);
      ++k;
      ++migrated_so_far;
    }
  }
  close(ep);
  return info;
}

// Per-connection results and the summary.
nlohmann::json summarize(const std::vector<std::unique_ptr<qs::LoadConnection>>& conns,
                         const std::vector<std::string>& start_errors, nlohmann::json* per_out) {
  const std::size_t connections = conns.size();
  nlohmann::json per = nlohmann::json::array();
  std::vector<double> handover, duration, handshake, min_rtt;
  std::size_t ok = 0, migrated = 0, with_handover = 0;
  std::uint64_t bytes = 0, ptos = 0, tx = 0, rx = 0, tx_after = 0, tx_before_reply = 0;
  qs::LossCounts loss, loss_after;
  for (std::size_t i = 0; i < connections; ++i) {
    const auto* c = conns[i].get();
    if (!c) {
      per.push_back({{"id", i}, {"success", false}, {"error", start_errors[i]}});
      continue;
    }
    const qs::LoadResult& r = c->result();
    const bool success = c->finished() && r.success;
    ok += success;
    migrated += r.migrated;
    bytes += r.bytes;
    ptos += r.pto_count;
    tx += r.tx_datagrams;
    rx += r.rx_datagrams;
    tx_after += r.tx_after_migration;
    tx_before_reply += r.tx_before_reply;
    loss.declared_lost += r.losses.declared_lost;
    loss.missing += r.losses.missing;
    loss.received += r.losses.received;
    loss_after.declared_lost += r.losses_after_migration.declared_lost;
    loss_after.missing += r.losses_after_migration.missing;
    loss_after.received += r.losses_after_migration.received;
    if (r.handover_ms >= 0) { handover.push_back(r.handover_ms); ++with_handover; }
    if (success) duration.push_back(r.duration_ms);
    if (r.handshake_ms >= 0) handshake.push_back(r.handshake_ms);
    if (r.min_rtt_ms >= 0) min_rtt.push_back(r.min_rtt_ms);
    per.push_back({{"id", i}, {"success", success}, {"bytes", r.bytes}, {"migrated", r.migrated},
                   {"handover_ms", r.handover_ms}, {"duration_ms", r.duration_ms},
                   {"handshake_ms", r.handshake_ms},
                   {"pto_count", r.pto_count}, {"min_rtt_ms", r.min_rtt_ms},
                   {"tx_datagrams", r.tx_datagrams}, {"tx_after_migration", r.tx_after_migration},
                   {"rx_old_path_after_migration", r.rx_old_path_after_migration},
                   {"rx_datagrams", r.rx_datagrams},
                   {"lost_sent", r.losses.declared_lost}, {"missing_received", r.losses.missing},
                   {"lost_sent_after_migration", r.losses_after_migration.declared_lost},
                   {"missing_received_after_migration", r.losses_after_migration.missing},
                   {"error", c->finished() ? r.error : std::string("timeout")}});
  }
  const nlohmann::json summary = {
      {"connections", connections}, {"succeeded", ok}, {"failed", connections - ok},
      {"migrated", migrated}, {"handover_measured", with_handover}, {"bytes", bytes},
      {"handover_ms_p50", percentile(handover, 0.5)}, {"handover_ms_p99", percentile(handover, 0.99)},
      {"duration_ms_p50", percentile(duration, 0.5)}, {"pto_total", ptos},
      {"handshake_ms_p50", percentile(handshake, 0.5)},
      {"handshake_ms_p99", percentile(handshake, 0.99)},
      {"min_rtt_ms_p50", percentile(min_rtt, 0.5)},
      {"tx_datagrams", tx}, {"rx_datagrams", rx}, {"tx_before_reply", tx_before_reply},
      {"lost_sent", loss.declared_lost}, {"missing_received", loss.missing},
      {"received_1rtt", loss.received},
      {"lost_sent_after_migration", loss_after.declared_lost},
      {"missing_received_after_migration", loss_after.missing},
      {"received_1rtt_after_migration", loss_after.received},
      // Share of packets lost after migration, both directions: (client packets declared
      // lost + server packet numbers never received) / (client datagrams + server packets).
      {"loss_after_migration",
       static_cast<double>(loss_after.declared_lost + loss_after.missing) /
           static_cast<double>(std::max<std::uint64_t>(1, loss_after.received + loss_after.missing + tx_after))}};
  *per_out = std::move(per);
  return summary;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-load: concurrent migrating HTTP/3 downloads"};
  std::string server = "198.18.210.10", local = "198.18.210.2", migrate_to, mode = "port", json_file;
  unsigned port = 443, connections = 10, timeout_s = 30;
  double rate = 0, hold_wait_s = 10, migrate_rate = 0;
  bool no_loss_count = false, barrier_signal = false;
  qs::LoadOptions opt;
  app.add_option("--server", server, "server address");
  app.add_option("--port", port, "server UDP port")->check(CLI::Range(1, 65535));
  app.add_option("--local", local, "first local address");
  app.add_option("--migrate-to", migrate_to, "second local address (--migration address)");
  app.add_option("--migration", mode, "none | port | address | rebind");
  app.add_option("--connections", connections, "concurrent connections")->check(CLI::Range(1, 20000));
  app.add_option("--size", opt.size, "body bytes per connection (GET /bytes/N)");
  app.add_option("--migrate-after", opt.migrate_after, "body bytes received before migrating");
  app.add_option("--rate", rate, "open-loop arrivals per second (0: all at once)");
  app.add_option("--timeout", timeout_s, "give up after this many seconds");
  app.add_option("--json", json_file, "per-connection results to this file");
  app.add_flag("--hold", opt.hold,
               "open every connection first (responses stall after --migrate-after bytes), "
               "then migrate them all together");
  app.add_option("--hold-wait", hold_wait_s,
                 "hold mode: migrate this many seconds after the last start even if some "
                 "connections are not yet held");
  app.add_option("--migrate-rate", migrate_rate,
                 "hold mode: migrations per second after the release (0: as fast as possible)");
  app.add_flag("--barrier-signal", barrier_signal,
               "hold mode: once held, print {\"held\": n} and migrate on SIGUSR1");
  app.add_flag("--no-loss-count", no_loss_count, "skip the qlog-based loss counting");
  CLI11_PARSE(app, argc, argv);

  if (mode == "none") opt.migration = qs::LoadMigration::none;
  else if (mode == "port") opt.migration = qs::LoadMigration::port;
  else if (mode == "address") opt.migration = qs::LoadMigration::address;
  else if (mode == "rebind") opt.migration = qs::LoadMigration::rebind;
  else {
    std::cerr << "quicstep-load: --migration is not none|port|address|rebind: `" << mode << "'\n";
    return 2;
  }
  if (!parse_addr(server, static_cast<std::uint16_t>(port), &opt.server) ||
      !parse_addr(local, 0, &opt.local) ||
      (opt.migration == qs::LoadMigration::address &&
       !parse_addr(migrate_to, 0, &opt.migrate_to))) {
    std::cerr << "quicstep-load: bad --server, --local or --migrate-to address\n";
    return 2;
  }
  opt.count_losses = !no_loss_count;
  // Two sockets per migrating connection while it hands over: raise the descriptor limit
  // (the hard limit too, which needs root; Debian's default hard limit is 20,000 here).
  rlimit nofile{};
  const rlim_t needed = 2 * static_cast<rlim_t>(connections) + 256;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < needed) {
    rlimit raised{std::max(needed, nofile.rlim_cur), std::max(needed, nofile.rlim_max)};
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      nofile.rlim_cur = nofile.rlim_max;
      setrlimit(RLIMIT_NOFILE, &nofile);
      std::cerr << "quicstep-load: descriptor limit " << nofile.rlim_max << " < " << needed
                << " needed (run as root to raise it)\n";
    }
  }
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_certificate_allocate_credentials(&cred);

  std::vector<std::unique_ptr<qs::LoadConnection>> conns(connections);
  std::vector<std::string> start_errors(connections);
  if (barrier_signal) std::signal(SIGUSR1, on_release);
  const RunInfo info = run_all(opt, cred, connections, rate, timeout_s, hold_wait_s,
                               barrier_signal, migrate_rate, conns, start_errors);
  nlohmann::json per;
  nlohmann::json summary = summarize(conns, start_errors, &per);
  summary["max_open"] = info.max_open;
  summary["held_at_barrier"] = info.held_at_barrier;
  summary["barrier_at_ms"] = info.barrier_at_ms;
  summary["barrier_spread_ms"] = info.barrier_spread_ms;
  const std::size_t ok = summary["succeeded"].get<std::size_t>();
  if (!json_file.empty()) {
    std::ofstream(json_file) << nlohmann::json{{"summary", summary}, {"connections", per}}.dump(1);
  }
  std::cout << summary.dump() << std::endl;
  conns.clear();
  gnutls_certificate_free_credentials(cred);
  return ok == connections ? 0 : 1;
}
