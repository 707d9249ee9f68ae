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
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "server_testbed/load/load_connection.hpp"
#include "server_testbed/worker.hpp"

namespace qs = quicstep::server_testbed;

namespace {

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

// Starts the connections (all at once, or open-loop at `rate` per second) and drives them
// until all finished or timeout_s passed.
void run_all(const qs::LoadOptions& opt, gnutls_certificate_credentials_t cred,
             unsigned connections, double rate, unsigned timeout_s,
             std::vector<std::unique_ptr<qs::LoadConnection>>& conns,
             std::vector<std::string>& start_errors) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  const ngtcp2_tstamp t0 = qs::monotonic_now();
  const ngtcp2_tstamp end = t0 + static_cast<ngtcp2_tstamp>(timeout_s) * NGTCP2_SECONDS;
  std::size_t started = 0, done = 0;
  std::vector<epoll_event> events(256);
  while (done < connections && qs::monotonic_now() < end) {
    ngtcp2_tstamp now = qs::monotonic_now();
    while (started < connections &&
           (rate <= 0 || static_cast<double>(now - t0) / NGTCP2_SECONDS * rate >= static_cast<double>(started))) {
      conns[started] = qs::LoadConnection::start(opt, cred, now, &start_errors[started]);
      if (conns[started]) {
        watch(ep, conns[started]->fd(), started);
      } else {
        ++done;
      }
      ++started;
    }
    ngtcp2_tstamp next = now + 10 * NGTCP2_MILLISECONDS;
    for (auto& c : conns) if (c && !c->finished()) next = std::min(next, c->next_deadline());
    const int wait_ms = next > now ? static_cast<int>((next - now) / NGTCP2_MILLISECONDS) : 0;
    const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), wait_ms);
    now = qs::monotonic_now();
    for (int i = 0; i < n; ++i) {
      auto& c = conns[events[i].data.u64 >> 32];
      if (!c || c->finished()) continue;
      c->on_readable(static_cast<int>(events[i].data.u64 & 0xffffffffu), now);
      if (c->take_new_fd()) watch(ep, c->fd(), events[i].data.u64 >> 32);
      if (c->finished()) ++done;
    }
    for (std::size_t i = 0; i < started; ++i) {
      auto& c = conns[i];
      if (!c || c->finished() || c->next_deadline() > now) continue;
      c->on_expiry(now);
      if (c->take_new_fd()) watch(ep, c->fd(), i);
      if (c->finished()) ++done;
    }
  }
  close(ep);
}

// Per-connection results and the summary.
nlohmann::json summarize(const std::vector<std::unique_ptr<qs::LoadConnection>>& conns,
                         const std::vector<std::string>& start_errors, nlohmann::json* per_out) {
  const std::size_t connections = conns.size();
  nlohmann::json per = nlohmann::json::array();
  std::vector<double> handover, duration;
  std::size_t ok = 0, migrated = 0, with_handover = 0;
  std::uint64_t bytes = 0, ptos = 0;
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
    if (r.handover_ms >= 0) { handover.push_back(r.handover_ms); ++with_handover; }
    if (success) duration.push_back(r.duration_ms);
    per.push_back({{"id", i}, {"success", success}, {"bytes", r.bytes}, {"migrated", r.migrated},
                   {"handover_ms", r.handover_ms}, {"duration_ms", r.duration_ms},
                   {"pto_count", r.pto_count},
                   {"error", c->finished() ? r.error : std::string("timeout")}});
  }
  const nlohmann::json summary = {
      {"connections", connections}, {"succeeded", ok}, {"failed", connections - ok},
      {"migrated", migrated}, {"handover_measured", with_handover}, {"bytes", bytes},
      {"handover_ms_p50", percentile(handover, 0.5)}, {"handover_ms_p99", percentile(handover, 0.99)},
      {"duration_ms_p50", percentile(duration, 0.5)}, {"pto_total", ptos}};
  *per_out = std::move(per);
  return summary;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-load: concurrent migrating HTTP/3 downloads"};
  std::string server = "198.18.210.10", local = "198.18.210.2", migrate_to, mode = "port", json_file;
  unsigned port = 443, connections = 10, timeout_s = 30;
  double rate = 0;
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
  // Two sockets per migrating connection: raise the descriptor limit to the hard limit.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_certificate_allocate_credentials(&cred);

  std::vector<std::unique_ptr<qs::LoadConnection>> conns(connections);
  std::vector<std::string> start_errors(connections);
  run_all(opt, cred, connections, rate, timeout_s, conns, start_errors);
  nlohmann::json per;
  const nlohmann::json summary = summarize(conns, start_errors, &per);
  const std::size_t ok = summary["succeeded"].get<std::size_t>();
  if (!json_file.empty()) {
    std::ofstream(json_file) << nlohmann::json{{"summary", summary}, {"connections", per}}.dump(1);
  }
  std::cout << summary.dump() << std::endl;
  conns.clear();
  gnutls_certificate_free_credentials(cred);
  return ok == connections ? 0 : 1;
}
