// quicstep-probe: which servers support QUIC connection migration. Reads domains, resolves
// the apex and www. names, and for every address runs HTTP/3 GETs around a NAT rebinding,
// an active port migration and (with a second local address) an address migration.
// One JSON line per domain on the output; usage in measurement/README.md.
#include <gnutls/gnutls.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "measurement/probe/probe_engine.hpp"
#include "net/socket_endpoint.hpp"
#include "quicstep_version.hpp"

using namespace quicstep::measurement::probe;
using quicstep::net::parse_endpoint;
using quicstep::net::parse_ip;
using quicstep::net::wildcard;

namespace {

bool set_local(const std::string& text, int family, const char* option, sockaddr_storage* out) {
  auto ip = parse_ip(text);
  if (!ip || ip->ss_family != family) {
    std::cerr << "quicstep-probe: " << option << ": not an IPv" << (family == AF_INET ? 4 : 6)
              << " address: `" << text << "'\n";
    return false;
  }
  *out = *ip;
  return true;
}

// Every connection in flight holds up to two sockets (old and new path): raise the soft
// descriptor limit to the hard one, and warn when --concurrency cannot fit.
void raise_fd_limit(std::size_t concurrency) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur != RLIM_INFINITY && 2 * concurrency + 64 > lim.rlim_cur) {
    std::cerr << "quicstep-probe: warning: --concurrency " << concurrency
              << " needs about " << 2 * concurrency + 64 << " descriptors; the limit is "
              << lim.rlim_cur << " (connections that get no socket are recorded as failed)\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-probe: QUIC connection-migration prober (one JSON line per domain)"};
  app.set_version_flag("--version", std::string("quicstep-probe ") + quicstep::kVersion);
  std::string dns, static_hosts_file, input_file, output_file, family = "both";
  std::string local4, local6, second4, second6;
  ProbeConfig config;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  config.threads = cores;
  unsigned timeout_ms = 5000;
  unsigned first_answer_ms = 0;
  bool no_www = false;
  bool sni_from_name = true;
  app.add_option("--dns", dns, "recursive resolver ADDR[:port] (port 53 by default)");
  app.add_option("--static-hosts", static_hosts_file,
                 "file of `name ip [ip...]' lines used instead of DNS (tests)");
  app.add_option("--input", input_file, "targets: `rank,domain' or `domain' lines (default stdin)");
  app.add_option("--output", output_file, "JSON lines (default stdout)");
  app.add_option("--tries", config.tries, "tries per migration test; the label is the majority")
      ->check(CLI::Range(1, 15));
  app.add_option("--port", config.port, "UDP port probed")->check(CLI::Range(1, 65535));
  app.add_option("--threads", config.threads, "event loops (default: number of cores)")
      ->check(CLI::Range(1, 256));
  app.add_option("--concurrency", config.concurrency, "connections in flight per process")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--rate", config.rate, "new connections per second, all threads (0: no limit)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--dns-concurrency", config.dns_concurrency,
                 "DNS queries in flight per process, all threads (more wait their turn)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--per-24", config.per_prefix,
                 "connections in flight per IPv4 /24 or IPv6 /48 (0: no limit)");
  app.add_option("--timeout-ms", timeout_ms,
                 "timeout of each step: DNS, handshake, first response, after the switch")
      ->check(CLI::Range(10u, 600000u));
  app.add_option("--first-answer-timeout-ms", first_answer_ms,
                 "an address's first handshake gives up this soon when the server sent "
                 "nothing (0: --timeout-ms)")
      ->check(CLI::Range(0u, 600000u));
  app.add_option("--family", family, "address families probed: 4, 6 or both")
      ->check(CLI::IsMember({"4", "6", "both"}));
  app.add_flag("--no-www", no_www, "probe the apex name only");
  app.add_flag("--sni-from-name,!--no-sni-from-name", sni_from_name,
               "SNI and :authority are the probed name (the default; the only mode)");
  app.add_option("--alpn", config.alpn, "ALPN offered")->check(CLI::IsMember({"h3"}));
  app.add_option("--max-addresses", config.max_addresses,
                 "addresses probed per name and family")->check(CLI::Range(1, 64));
  app.add_option("--local-address", local4, "IPv4 source address of the first path");
  app.add_option("--local-address6", local6, "IPv6 source address of the first path");
  app.add_option("--second-local-address", second4, "IPv4 source address for address migration");
  app.add_option("--second-local-address6", second6,
                 "IPv6 source address for address migration");
  CLI11_PARSE(app, argc, argv);

  if (!sni_from_name) {
    std::cerr << "quicstep-probe: --no-sni-from-name is not supported\n";
    return 2;
  }
  StaticHosts hosts;
  if (!static_hosts_file.empty()) {
    if (auto loaded = load_static_hosts(static_hosts_file, &hosts); !loaded) {
      std::cerr << "quicstep-probe: " << loaded.error().message << '\n';
      return 2;
    }
    config.static_hosts = &hosts;
  } else if (dns.empty()) {
    std::cerr << "quicstep-probe: --dns ADDR[:port] is required (or --static-hosts FILE)\n";
    return 2;
  } else {
    config.dns = parse_endpoint(dns, 53);
    if (!config.dns) {
      std::cerr << "quicstep-probe: --dns: not ADDR[:port]: `" << dns << "'\n";
      return 2;
    }
  }
  config.ipv4 = family != "6";
  config.ipv6 = family != "4";
  config.with_www = !no_www;
  config.timeout_ns = std::uint64_t{timeout_ms} * 1'000'000;
  config.first_answer_timeout_ns = std::uint64_t{first_answer_ms} * 1'000'000;
  config.local4 = wildcard(AF_INET);
  config.local6 = wildcard(AF_INET6);
  if (!local4.empty() && !set_local(local4, AF_INET, "--local-address", &config.local4)) return 2;
  if (!local6.empty() && !set_local(local6, AF_INET6, "--local-address6", &config.local6)) return 2;
  if (!second4.empty()) {
    sockaddr_storage a{};
    if (!set_local(second4, AF_INET, "--second-local-address", &a)) return 2;
    config.second_local4 = a;
  }
  if (!second6.empty()) {
    sockaddr_storage a{};
    if (!set_local(second6, AF_INET6, "--second-local-address6", &a)) return 2;
    config.second_local6 = a;
  }

  std::ifstream input_stream;
  if (!input_file.empty()) {
    input_stream.open(input_file);
    if (!input_stream) {
      std::cerr << "quicstep-probe: --input: cannot read `" << input_file << "'\n";
      return 2;
    }
  }
  std::FILE* out = stdout;
  if (!output_file.empty()) {
    out = std::fopen(output_file.c_str(), "w");
    if (!out) {
      std::cerr << "quicstep-probe: --output: cannot write `" << output_file << "'\n";
      return 2;
    }
  }
  raise_fd_limit(config.concurrency);
  gnutls_global_init();
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_certificate_allocate_credentials(&cred);  // no verification: a measurement client

  SharedOutput output(out);
  SharedInput input(input_file.empty() ? std::cin : input_stream, output);
  SharedAdmission admission(config.rate, config.per_prefix);
  const std::size_t per_thread =
      std::max<std::size_t>(1, (config.concurrency + config.threads - 1) / config.threads);
  std::vector<std::unique_ptr<ProbeEngine>> engines;
  for (std::size_t i = 0; i < config.threads; ++i) {
    engines.push_back(
        std::make_unique<ProbeEngine>(config, per_thread, input, output, admission, cred));
  }
  input.start();
  std::vector<std::thread> threads;
  std::vector<quicstep::common::Outcome> ran(config.threads);
  for (std::size_t i = 0; i < config.threads; ++i) {
    threads.emplace_back([&, i] {
      ran[i] = engines[i]->run();
      if (!ran[i]) std::cerr << "quicstep-probe: " << ran[i].error().message << '\n';
    });
  }
  for (auto& t : threads) t.join();
  const bool failed = std::any_of(ran.begin(), ran.end(),
                                  [](const quicstep::common::Outcome& r) { return !r.ok(); });
  if (failed) {
    // The reader may wait for room that no loop will make: leave without joining it.
    std::fflush(out);
    std::_Exit(1);
  }
  input.join();
  engines.clear();
  gnutls_certificate_free_credentials(cred);
  if (out != stdout) std::fclose(out);
  return 0;
}
