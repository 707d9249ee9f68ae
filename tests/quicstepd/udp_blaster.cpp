// udp_blaster: the kernel's cost per sent UDP datagram, for bench_rule_cost.py.
//
//   udp_blaster [--unconnected] DST_ADDR COUNT SOURCE_PORT [DEST_PORT]   (IPv4 or IPv6)
//
// Sends COUNT 1200-byte datagrams (first byte 0x41: a QUIC short header) from a connected
// socket with sendmmsg, 64 at a time (--unconnected: from an unconnected socket, each
// datagram addressed, so that each pays a route lookup, as ngtcp2's example client's do),
// and prints one line: system CPU ns per datagram, wall-clock ns per datagram, failed
// sendmmsg calls. The rest of each datagram is
// pseudo-random, as a protected packet's is, and its byte 21 (quicstepd's refresh sample,
// client/kernel/nft_rules.cpp) takes each of its 256 values once in every 256 datagrams: the
// rules' share of refreshed packets is exact, as in real traffic. System time is the
// kernel's work on the send path (netfilter hooks included); the caller sinks the datagrams
// cheaply.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>

namespace {

template <typename T>
bool parse_number(std::string_view text, T min, T max, T* out) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

// A socket address of `family` with `port`; address `addr` (nullptr: any).
sockaddr_storage endpoint(int family, const in6_addr* addr, std::uint16_t port, socklen_t* len) {
  sockaddr_storage ss{};
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    if (addr != nullptr) std::memcpy(&a->sin_addr, addr, sizeof a->sin_addr);
    *len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    if (addr != nullptr) a->sin6_addr = *addr;
    *len = sizeof(sockaddr_in6);
  }
  return ss;
}

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  const bool unconnected = argc > 1 && std::string_view(argv[1]) == "--unconnected";
  if (unconnected) {
    --argc;
    ++argv;
  }
  long count = 0;
  std::uint16_t sport = 0, dport = 443;
  if (argc < 4 || argc > 5 || !parse_number<long>(argv[2], 1, 1L << 40, &count) ||
      !parse_number<std::uint16_t>(argv[3], 1, 65535, &sport) ||
      (argc == 5 && !parse_number<std::uint16_t>(argv[4], 1, 65535, &dport))) {
    std::fprintf(stderr,
                 "usage: udp_blaster [--unconnected] DST_ADDR COUNT SOURCE_PORT [DEST_PORT]\n");
    return 2;
  }
  in6_addr addr{};  // large enough for either family's address
  const int family = inet_pton(AF_INET, argv[1], &addr) == 1    ? AF_INET
                     : inet_pton(AF_INET6, argv[1], &addr) == 1 ? AF_INET6
                                                                : AF_UNSPEC;
  if (family == AF_UNSPEC) {
    std::fprintf(stderr, "udp_blaster: not an IP address: `%s'\n", argv[1]);
    return 2;
  }
  socklen_t len = 0;
  const sockaddr_storage src = endpoint(family, nullptr, sport, &len);
  const sockaddr_storage dst = endpoint(family, &addr, dport, &len);
  const int fd = socket(family, SOCK_DGRAM, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&src), len) != 0 ||
      (!unconnected && connect(fd, reinterpret_cast<const sockaddr*>(&dst), len) != 0)) {
    std::perror("udp_blaster: socket/bind/connect");
    return 1;
  }
  constexpr int kBatch = 64;
  constexpr int kBuffers = 256;  // 4 batches: every value of byte 21 once
  static std::array<std::array<char, 1200>, kBuffers> bufs;
  std::array<iovec, kBuffers> iov{};
  std::array<mmsghdr, kBuffers> msgs{};
  std::mt19937 random(2026);  // fixed seed: every run sends the same bytes
  for (int i = 0; i < kBuffers; ++i) {
    for (char& c : bufs[i]) c = static_cast<char>(random() & 0xff);
    bufs[i][0] = 0x41;  // short header, fixed bit, key phase 0, packet number length 2
    bufs[i][21] = static_cast<char>((i * 167 + 13) & 0xff);  // 167 odd: a permutation
    iov[i] = {bufs[i].data(), bufs[i].size()};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    if (unconnected) {
      msgs[i].msg_hdr.msg_name = const_cast<sockaddr_storage*>(&dst);
      msgs[i].msg_hdr.msg_namelen = len;
    }
  }
  rusage r0{}, r1{};
  getrusage(RUSAGE_SELF, &r0);
  const auto t0 = std::chrono::steady_clock::now();
  long sent = 0, errors = 0;
  for (long call = 0; sent < count; ++call) {
    const int n = sendmmsg(fd, msgs.data() + (call % (kBuffers / kBatch)) * kBatch, kBatch, 0);
    if (n < 0) {
      if (++errors > 1000000) break;
      continue;
    }
    sent += n;
  }
  const auto t1 = std::chrono::steady_clock::now();
  getrusage(RUSAGE_SELF, &r1);
  close(fd);
  if (sent == 0) {
    std::fprintf(stderr, "udp_blaster: nothing sent\n");
    return 1;
  }
  const double sys = seconds(r1.ru_stime) - seconds(r0.ru_stime);
  const double wall = std::chrono::duration<double>(t1 - t0).count();
  std::printf("%.1f %.1f %ld\n", sys / sent * 1e9, wall / sent * 1e9, errors);
  return 0;
}
