// quicstep-flood: a bounded handshake flood for the lab. Raw sockets with a written IP
// header (IPPROTO_RAW) and sendmmsg; spoofed sources drawn from a prefix that must lie in
// the lab's ranges (198.18.0.0/15, 2001:db8::/32), as must the target. --count and
// --duration are mandatory caps; --rate paces in packets per second. Prints one JSON line:
// what was sent and the rate achieved.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/quic_header.hpp"
#include "server_testbed/flood/flood_packet.hpp"
#include "server_testbed/flood/lab_prefix.hpp"

namespace fl = quicstep::server_testbed::flood;
namespace common = quicstep::common;

namespace {

std::atomic<bool> g_stop{false};

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void sleep_until(double t) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t);
  ts.tv_nsec = static_cast<long>((t - static_cast<double>(ts.tv_sec)) * 1e9);
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

socklen_t to_sockaddr(const common::IpAddress& a, std::uint16_t port, sockaddr_storage* out) {
  *out = {};
  if (a.family == common::IpFamily::v4) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(&v4.sin_addr, a.bytes.data(), 4);
    std::memcpy(out, &v4, sizeof(v4));
    return sizeof(v4);
  }
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_port = htons(port);
  std::memcpy(&v6.sin6_addr, a.bytes.data(), 16);
  std::memcpy(out, &v6, sizeof(v6));
  return sizeof(v6);
}

std::string hex(common::Bytes b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (auto c : b) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

bool unhex(const std::string& text, std::vector<std::uint8_t>* out) {
  if (text.size() % 2) return false;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + i + 2, v, 16);
    if (ec != std::errc{} || end != text.data() + i + 2) return false;
    out->push_back(static_cast<std::uint8_t>(v));
  }
  return true;
}

// Sends one well-formed Initial from an ordinary UDP socket (this host's own address) and
// returns the token of the Retry that answers it: the "captured" token of the replay variant.
common::Outcome capture_token(const common::IpAddress& target, std::uint16_t port,
                              std::mt19937_64& rng, std::vector<std::uint8_t>* token) {
  sockaddr_storage dst{};
  const socklen_t dst_len = to_sockaddr(target, port, &dst);
  const int fd = socket(dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return common::Failure(std::string("socket: ") + std::strerror(errno));
  timeval tv{0, 300000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  fl::QuicFloodSpec spec;
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto payload = fl::build_quic_payload(spec, rng);
    if (!payload) break;
    sendto(fd, payload->data(), payload->size(), 0, reinterpret_cast<sockaddr*>(&dst), dst_len);
    std::array<std::uint8_t, 2048> buf{};
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) continue;
    auto header = common::parse_quic_header(common::Bytes(buf.data(), static_cast<std::size_t>(n)), 0);
    if (header && header->type == common::LongPacketType::retry && !header->token.empty()) {
      token->assign(header->token.begin(), header->token.end());
      close(fd);
      return {};
    }
  }
  close(fd);
  return common::Failure("no Retry came back (is the server running with Retry?)");
}

struct Totals {
  std::uint64_t sent = 0;
  std::uint64_t send_errors = 0;
  double elapsed = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-flood: a bounded QUIC Initial / TCP SYN flood inside the lab ranges"};
  std::string target_text, sources_text = "198.18.232.0/22", variant_text = "initial", token_hex,
              json_file;
  unsigned port = 443, batch = 32, pool = 0;
  std::uint64_t count = 0;
  double duration = 0, rate = 0;
  fl::QuicFloodSpec spec;
  app.add_option("--target", target_text, "target address (inside the lab ranges)")->required();
  app.add_option("--port", port, "target port")->check(CLI::Range(1, 65535));
  app.add_option("--sources", sources_text,
                 "spoofed source prefix, inside 198.18.0.0/15 or 2001:db8::/32");
  app.add_option("--variant", variant_text, "initial | garbage | replay | forged | syn");
  app.add_option("--count", count, "cap: packets to send at most")->required()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100000000}));
  app.add_option("--duration", duration, "cap: seconds to run at most")->required()
      ->check(CLI::Range(0.01, 600.0));
  app.add_option("--rate", rate, "target packets per second (0: as fast as possible)")
      ->check(CLI::Range(0.0, 10000000.0));
  app.add_option("--batch", batch, "packets per sendmmsg call")->check(CLI::Range(1, 1024));
  app.add_option("--pool", pool,
                 "pre-build this many QUIC payloads and cycle through them (0: a fresh "
                 "payload, DCID and ClientHello for every packet)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--token-hex", token_hex, "replay: the token to replay (default: capture one "
                 "from a Retry of the target, sent from this host's own address)");
  app.add_option("--forged-token-length", spec.forged_token_length, "forged: token bytes");
  app.add_option("--min-dcid", spec.min_dcid_length, "shortest random DCID");
  app.add_option("--max-dcid", spec.max_dcid_length, "longest random DCID");
  app.add_option("--size", spec.datagram_size, "UDP payload bytes (1200..1472)");
  app.add_option("--json", json_file, "also write the summary to this file");
  CLI11_PARSE(app, argc, argv);

  auto variant = fl::parse_variant(variant_text);
  if (!variant) {
    std::cerr << "quicstep-flood: --variant is not initial|garbage|replay|forged|syn: `"
              << variant_text << "'\n";
    return 2;
  }
  spec.variant = *variant;
  auto target = fl::parse_prefix(target_text);
  if (!target || !fl::inside_lab(target->base)) {
    std::cerr << "quicstep-flood: --target "
              << (target ? "is outside 198.18.0.0/15 and 2001:db8::/32" : target.error().message)
              << ": `" << target_text << "'\n";
    return 2;
  }
  auto sources = fl::parse_prefix(sources_text);
  if (!sources || !fl::inside_lab(*sources) ||
      sources->base.family != target->base.family) {
    std::cerr << "quicstep-flood: --sources "
              << (!sources ? sources.error().message
                  : sources->base.family != target->base.family
                      ? "is not of the target's address family"
                      : "is not inside 198.18.0.0/15 or 2001:db8::/32")
              << ": `" << sources_text << "'\n";
    return 2;
  }
  std::random_device seed;
  std::mt19937_64 rng((static_cast<std::uint64_t>(seed()) << 32) | seed());
  if (spec.variant == fl::FloodVariant::replay) {
    const common::Outcome token =
        !token_hex.empty()
            ? (unhex(token_hex, &spec.token) ? common::Outcome{}
                                             : common::Outcome(common::Failure(
                                                   "--token-hex is not hex: `" + token_hex + "'")))
            : capture_token(target->base, static_cast<std::uint16_t>(port), rng, &spec.token);
    if (!token) {
      std::cerr << "quicstep-flood: no token to replay: " << token.error().message << "\n";
      return 2;
    }
  }
  if (spec.variant != fl::FloodVariant::syn) {
    if (auto checked = fl::check_spec(spec); !checked) {
      std::cerr << "quicstep-flood: " << checked.error().message << "\n";
      return 2;
    }
  }

  const bool v4 = target->base.family == common::IpFamily::v4;
  const int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
  if (fd < 0) {
    std::cerr << "quicstep-flood: raw socket: " << std::strerror(errno) << " (needs root)\n";
    return 1;
  }
  const int sndbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });

  std::vector<std::vector<std::uint8_t>> payloads(pool);
  for (auto& p : payloads) {
    auto built = fl::build_quic_payload(spec, rng);
    if (!built) return 1;
    p = std::move(*built);
  }
  sockaddr_storage dst{};
  const socklen_t dst_len = to_sockaddr(target->base, 0, &dst);
  std::vector<std::vector<std::uint8_t>> packets(batch);
  std::vector<iovec> iov(batch);
  std::vector<mmsghdr> msgs(batch);

  // Tells a driver that the flood starts now (after any pool was built): one line on stderr.
  std::cerr << "quicstep-flood: started" << std::endl;
  // Paced: at most ~1 ms of packets per sendmmsg, so that a low rate is not sent as bursts.
  const unsigned paced_batch =
      rate > 0 ? std::clamp(static_cast<unsigned>(rate / 1000), 1u, batch) : batch;
  Totals totals;
  const double start = now_s();
  const double end = start + duration;
  std::uint64_t next_pool = 0;
  while (!g_stop && totals.sent + totals.send_errors < count) {
    const std::uint64_t done = totals.sent + totals.send_errors;
    if (rate > 0) sleep_until(start + static_cast<double>(done) / rate);
    if (now_s() >= end) break;
    const auto n = static_cast<unsigned>(std::min<std::uint64_t>(paced_batch, count - done));
    for (unsigned i = 0; i < n; ++i) {
      fl::Endpoints ends{fl::random_address(*sources, rng), target->base,
                         static_cast<std::uint16_t>(1024 + rng() % 64511),
                         static_cast<std::uint16_t>(port)};
      if (spec.variant == fl::FloodVariant::syn) {
        packets[i] = fl::frame_tcp_syn(ends, static_cast<std::uint32_t>(rng()));
      } else if (pool > 0) {
        packets[i] = fl::frame_udp(ends, payloads[next_pool++ % pool]);
      } else {
        auto payload = fl::build_quic_payload(spec, rng);
        if (!payload) return 1;
        packets[i] = fl::frame_udp(ends, *payload);
      }
      iov[i] = {packets[i].data(), packets[i].size()};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_name = &dst;
      msgs[i].msg_hdr.msg_namelen = dst_len;
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    unsigned off = 0;
    while (off < n) {
      const int r = sendmmsg(fd, msgs.data() + off, n - off, 0);
      if (r > 0) {
        off += static_cast<unsigned>(r);
        totals.sent += static_cast<unsigned>(r);
      } else {
        ++off;  // ENOBUFS and the like: that packet is lost, count it and go on
        ++totals.send_errors;
      }
    }
  }
  totals.elapsed = now_s() - start;
  close(fd);
  nlohmann::json out = {
      {"variant", std::string(fl::to_string(spec.variant))},
      {"target", target_text},
      {"sources", sources_text},
      {"target_pps", rate},
      {"sent", totals.sent},
      {"send_errors", totals.send_errors},
      {"elapsed_s", totals.elapsed},
      {"achieved_pps", totals.elapsed > 0 ? static_cast<double>(totals.sent) / totals.elapsed : 0},
      {"token_hex", hex(spec.token)}};
  if (!json_file.empty()) std::ofstream(json_file) << out.dump() << "\n";
  std::cout << out.dump() << std::endl;
  return 0;
}
