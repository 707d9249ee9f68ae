// quicstep-gate: the Retry gate in front of quicstep-server --gate NAME (README "Retry gate").
// It joins the server's SO_REUSEPORT group with its own socket, puts that socket in the
// pinned sockarray at the gate slot (the steering program then hands it the Initials of
// flows not allowlisted), answers token-less Initials with Retries, and forwards Initials
// with valid tokens to the workers' unix datagram sockets, allowlisting their flows. When
// it exits or dies, the kernel drops its socket from the sockarray and the workers do Retry
// themselves (fail-open); started again, it takes the Initials back.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>

#include "net/clock.hpp"
#include "net/socket_endpoint.hpp"
#include "net/udp_socket.hpp"
#include "server_testbed/gate/batch_io.hpp"
#include "server_testbed/gate/gate_core.hpp"
#include "server_testbed/gate/gate_maps.hpp"
#include "server_testbed/gate/mac_address.hpp"
#include "server_testbed/stats_file.hpp"
#include "server_testbed/token/master_key.hpp"

namespace qs = quicstep::server_testbed;

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct Options {
  std::string name, listen, master_key_file, stats_file;
  int cpu = -1;
  double allowlist_ttl_s = 30;
  double retry_token_lifetime_s = 10, new_token_lifetime_s = 3600, key_period_s = 3600;
  unsigned duration_s = 0;
  std::string tx = "udp";
  std::string tx_interface, tx_next_hop;
  int rcvbuf = 2 << 20;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-gate: stateless Retry gate in front of quicstep-server --gate NAME"};
  Options opt;
  app.add_option("--gate", opt.name, "the NAME given to quicstep-server --gate")->required();
  app.add_option("--listen", opt.listen, "the server's address:port or [address]:port")->required();
  app.add_option("--master-key", opt.master_key_file, "universal-token master key file")->required();
  app.add_option("--cpu", opt.cpu, "pin the gate to this CPU");
  app.add_option("--stats-file", opt.stats_file, "JSON counters, rewritten every second");
  app.add_option("--duration", opt.duration_s, "exit after this many seconds (0: on signal)");
  app.add_option("--tx", opt.tx,
                 "how Retries leave: udp (the listening UDP socket, sendmmsg), raw (an "
                 "IPPROTO_RAW socket, IP + UDP header written by the gate, sendmmsg) or packet "
                 "(an AF_PACKET socket on --tx-interface to --tx-next-hop, qdisc bypassed: no "
                 "routing, no netfilter, sendmmsg); raw and packet need a specific --listen "
                 "address")
      ->check(CLI::IsMember({"udp", "raw", "packet"}));
  app.add_option("--tx-interface", opt.tx_interface, "--tx packet: the interface to send on");
  app.add_option("--tx-next-hop", opt.tx_next_hop,
                 "--tx packet: the next hop's MAC address (every Retry goes to it)");
  app.add_option("--rcvbuf", opt.rcvbuf,
                 "receive buffer of the gate's UDP socket in bytes (the kernel doubles it); 0 "
                 "keeps the 16 MiB the workers' sockets get. Smaller: a saturated gate reads "
                 "Initials that are still in the CPU caches (README \"Retry gate\" -> capacity)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--allowlist-ttl", opt.allowlist_ttl_s, "seconds a verified flow bypasses the gate")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--retry-token-lifetime", opt.retry_token_lifetime_s, "seconds")
      ->check(CLI::Range(0.001, 3600.0));
  app.add_option("--new-token-lifetime", opt.new_token_lifetime_s, "seconds")
      ->check(CLI::Range(0.001, 86400.0 * 30));
  app.add_option("--key-period", opt.key_period_s, "token key rotation period, seconds")
      ->check(CLI::Range(1.0, 86400.0 * 30));
  CLI11_PARSE(app, argc, argv);

  std::string error;
  sockaddr_storage listen{};
  if (const auto endpoint = quicstep::net::parse_endpoint(opt.listen, 443)) {
    listen = *endpoint;
  } else {
    std::cerr << "quicstep-gate: --listen: not address:port or [address]:port: `" << opt.listen
              << "'\n";
    return 2;
  }
  if (!qs::valid_gate_name(opt.name)) {
    std::cerr << "quicstep-gate: --gate: not 1-32 letters, digits, - or _: `" << opt.name << "'\n";
    return 2;
  }
  const auto loaded_key = qs::token::load_master_key(opt.master_key_file);
  if (!loaded_key) {
    std::cerr << "quicstep-gate: " << loaded_key.error().message << "\n";
    return 2;
  }
  const std::vector<std::uint8_t>& master = *loaded_key;
  qs::token::TokenConfig tcfg;
  tcfg.retry_lifetime_ms = static_cast<std::uint64_t>(opt.retry_token_lifetime_s * 1000);
  tcfg.new_token_lifetime_ms = static_cast<std::uint64_t>(opt.new_token_lifetime_s * 1000);
  tcfg.key_period_ms = static_cast<std::uint64_t>(opt.key_period_s * 1000);
  auto token_codec = qs::token::TokenCodec::create(master, tcfg);
  if (!token_codec) {
    std::cerr << "quicstep-gate: bad token configuration\n";
    return 2;
  }

  auto opened_maps = qs::gate::GateMaps::open(opt.name);
  if (!opened_maps) {
    std::cerr << "quicstep-gate: " << opened_maps.error().message << "\n";
    return 1;
  }
  std::unique_ptr<qs::gate::GateMaps> maps = std::move(*opened_maps);
  qs_steer_config bpf_cfg{};
  if (!maps->read_config(&bpf_cfg) || !bpf_cfg.gate) {
    std::cerr << "quicstep-gate: the server's steering config is unreadable or not in gate mode\n";
    return 1;
  }
  qs::CidConfig cid_cfg;
  cid_cfg.config_id = bpf_cfg.config_id;
  cid_cfg.cid_len = bpf_cfg.cid_len;
  cid_cfg.worker_count = bpf_cfg.worker_count;
  if (bpf_cfg.obfuscate) cid_cfg.key = bpf_cfg.key;
  auto codec = qs::CidCodec::create(cid_cfg);
  if (!codec) {
    std::cerr << "quicstep-gate: the server's CID config is not usable\n";
    return 1;
  }

  // How the Retries leave (checked before the gate takes any Initial).
  qs::gate::RecvBatch in;
  qs::gate::SendBatch out;
  int raw_fd = -1;
  if (opt.tx != "udp") {
    const bool any = listen.ss_family == AF_INET
                         ? reinterpret_cast<const sockaddr_in&>(listen).sin_addr.s_addr == INADDR_ANY
                         : IN6_IS_ADDR_UNSPECIFIED(
                               &reinterpret_cast<const sockaddr_in6&>(listen).sin6_addr);
    if (any) {
      std::cerr << "quicstep-gate: --tx " << opt.tx << " needs a specific --listen address "
                   "(the Retries' source), not `" << opt.listen << "'\n";
      return 2;
    }
    sockaddr_ll next_hop{};
    if (opt.tx == "packet") {
      const auto mac = qs::gate::parse_mac(opt.tx_next_hop);
      next_hop.sll_family = AF_PACKET;
      next_hop.sll_ifindex = static_cast<int>(if_nametoindex(opt.tx_interface.c_str()));
      if (!mac || next_hop.sll_ifindex == 0) {
        std::cerr << "quicstep-gate: --tx packet needs --tx-interface (an existing interface, "
                     "not `" << opt.tx_interface << "') and --tx-next-hop (a unicast MAC "
                     "address, not `" << opt.tx_next_hop << "')\n";
        return 2;
      }
      next_hop.sll_halen = 6;
      std::memcpy(next_hop.sll_addr, mac->data(), 6);
      // protocol 0: a send-only socket, it receives nothing
      raw_fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    } else {
      raw_fd = socket(listen.ss_family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    }
    if (raw_fd < 0) {
      std::cerr << "quicstep-gate: --tx " << opt.tx << ": socket: " << std::strerror(errno)
                << "\n";
      return 1;
    }
    const int sndbuf = 4 << 20;
    setsockopt(raw_fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
    if (opt.tx == "packet") {
      const int one = 1;
      if (setsockopt(raw_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) != 0) {
        std::cerr << "quicstep-gate: PACKET_QDISC_BYPASS: " << std::strerror(errno) << "\n";
      }
      out.use_packet(raw_fd, listen, next_hop);
    } else {
      out.use_raw(raw_fd, listen);
    }
  }

  // Forwarding: one unbound unix datagram socket; each worker's path precomputed.
  const int fwd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  std::vector<sockaddr_un> worker_addrs(bpf_cfg.worker_count);
  for (std::uint32_t i = 0; i < bpf_cfg.worker_count; ++i) {
    const std::string path = qs::gate_worker_socket(opt.name, i);
    worker_addrs[i].sun_family = AF_UNIX;
    std::snprintf(worker_addrs[i].sun_path, sizeof(worker_addrs[i].sun_path), "%s", path.c_str());
  }

  auto opened =
      quicstep::net::UdpSocket::open_reuseport(listen, quicstep::net::sockaddr_len(listen));
  if (!opened) {
    std::cerr << "quicstep-gate: " << opt.listen << ": " << opened.error().message << "\n";
    return 1;
  }
  quicstep::net::UdpSocket sock = std::move(*opened);
  if (opt.rcvbuf > 0 &&
      setsockopt(sock.fd(), SOL_SOCKET, SO_RCVBUFFORCE, &opt.rcvbuf, sizeof(opt.rcvbuf)) != 0 &&
      setsockopt(sock.fd(), SOL_SOCKET, SO_RCVBUF, &opt.rcvbuf, sizeof(opt.rcvbuf)) != 0) {
    std::cerr << "quicstep-gate: --rcvbuf " << opt.rcvbuf << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  if (auto added = maps->add_gate_socket(sock.fd()); !added) {
    std::cerr << "quicstep-gate: " << added.error().message << "\n";
    return 1;
  }
  if (opt.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opt.cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::cerr << "quicstep-gate: --cpu " << opt.cpu << ": " << std::strerror(errno) << "\n";
      return 2;
    }
  }
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  qs::TokenCounters token_counters;
  qs::gate::GateCounters counters;
  qs::gate::GateCore core(*codec, qs::AddressValidator(std::move(*token_codec), true, token_counters),
                          counters);
  const std::uint64_t ttl_ns = static_cast<std::uint64_t>(opt.allowlist_ttl_s * 1e9);
  auto stats = [&] {
    nlohmann::json j = counters.to_json(token_counters);
    j["gate"] = opt.name;
    j["workers"] = bpf_cfg.worker_count;
    return j;
  };
  std::cerr << "quicstep-gate: " << opt.name << " on " << opt.listen << ", "
            << bpf_cfg.worker_count << " workers, Retries sent by " << opt.tx << "\n";

  const auto start = quicstep::net::monotonic_now();
  auto next_stats = start;
  while (!g_stop.load()) {
    pollfd pfd{sock.fd(), POLLIN, 0};
    poll(&pfd, 1, 100);
    for (int round = 0; round < 16; ++round) {  // then stats and the stop flag
      const std::size_t n = in.receive(sock.fd());
      if (n == 0) break;
      const std::uint64_t now_ms = qs::wall_clock_ms();
      for (std::size_t i = 0; i < n; ++i) {
        const sockaddr_storage& from = in.from(i);
        const auto r = core.on_datagram(in.data(i), from, now_ms);
        if (r.kind == qs::gate::GateCore::Kind::retry) {
          if (!out.add(sock.fd(), r.out, from)) qs::gate::GateCounters::add(counters.drop_send_failed);
        } else if (r.kind == qs::gate::GateCore::Kind::forward) {
          // Allowlist first: the worker's answer makes the client send more at once.
          if (ttl_ns > 0 && maps->allow(from, quicstep::net::monotonic_now().unsigned_ns() + ttl_ns)) {
            qs::gate::GateCounters::add(counters.allowlisted);
          }
          const auto& to = worker_addrs[r.worker];
          if (sendto(fwd, r.out.data(), r.out.size(), MSG_DONTWAIT,
                     reinterpret_cast<const sockaddr*>(&to), sizeof(to)) >= 0) {
            qs::gate::GateCounters::add(counters.forwarded);
          } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
            qs::gate::GateCounters::add(counters.drop_queue_full);
          } else {
            qs::gate::GateCounters::add(counters.drop_send_failed);
          }
        }
      }
      out.flush(sock.fd());
    }
    const auto now = quicstep::net::monotonic_now();
    if (now >= next_stats) {
      qs::write_stats(opt.stats_file, stats());
      next_stats = now + std::chrono::seconds(1);
    }
    if (opt.duration_s > 0 && now - start >= std::chrono::seconds(opt.duration_s)) break;
  }
  close(fwd);
  if (raw_fd >= 0) close(raw_fd);
  const auto final_stats = stats();
  qs::write_stats(opt.stats_file, final_stats);
  std::cout << final_stats.dump() << std::endl;
  return 0;
}
