// fib_sender: the sockets bench_fib_rules.py needs and udp_blaster does not provide.
//
//   fib_sender blast DST_ADDR COUNT SOURCE_PORT DEST_PORT BIND_ADDR|any
//       An UNCONNECTED socket bound to BIND_ADDR:SOURCE_PORT sends COUNT 1200-byte
//       datagrams with sendmmsg, 64 at a time, each message naming DST_ADDR:DEST_PORT, so
//       that every datagram makes its own route lookup (a connected socket caches its
//       route). Prints udp_blaster's line: system CPU ns per datagram, wall-clock ns per
//       datagram, failed sendmmsg calls.
//
//   fib_sender steps DST_ADDR SOURCE_PORT DEST_PORT BIND_ADDR|any connected|unconnected
//       One socket, bound (and connected, or not) once; prints "ready ADDR PORT" (its
//       getsockname), then answers one line per command read on stdin:
//         send N   sends N datagrams (send, or sendto on an unconnected socket):
//                  "sent OK err ERRORS LAST_ERROR|-"
//         name     "name ADDR PORT": the socket's source address now
//         quit     exits
//       so that the caller can change ip rules between steps and see where the same
//       socket's next datagrams go.
//
// Addresses are IPv4 or IPv6 literals. The payload is a QUIC short header's first octet
// and pseudo-random bytes, as udp_blaster's.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <string_view>

namespace {

constexpr int kBatch = 64;
constexpr int kBuffers = 256;
constexpr std::size_t kDatagramLen = 1200;

template <typename T>
bool parse_number(std::string_view text, T min, T max, T* out) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

// An endpoint parsed from an address literal ("any": the family's wildcard).
struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_UNSPEC;
};

bool make_endpoint(const char* text, std::uint16_t port, int want_family, Endpoint* ep) {
  in6_addr raw{};  // large enough for either family's address
  int family = AF_UNSPEC;
  if (std::strcmp(text, "any") == 0) {
    family = want_family;
  } else if (inet_pton(AF_INET, text, &raw) == 1) {
    family = AF_INET;
  } else if (inet_pton(AF_INET6, text, &raw) == 1) {
    family = AF_INET6;
  }
  if (family == AF_UNSPEC || (want_family != AF_UNSPEC && family != want_family)) return false;
  ep->family = family;
  ep->addr = {};
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ep->addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::memcpy(&a->sin_addr, &raw, sizeof a->sin_addr);
    ep->len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ep->addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = raw;
    ep->len = sizeof(sockaddr_in6);
  }
  return true;
}

// "ADDR PORT" of the socket's local end.
std::string local_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char text[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    if (ss.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
  }
  return std::string(text) + " " + std::to_string(port);
}

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

std::array<std::array<char, kDatagramLen>, kBuffers> g_payloads;

void fill_payloads() {
  std::mt19937 random(2026);  // fixed seed: every run sends the same bytes
  for (auto& payload : g_payloads) {
    for (char& c : payload) c = static_cast<char>(random() & 0xff);
    payload[0] = 0x41;  // short header, fixed bit
  }
}

// A UDP socket bound to `bind_to`; -1 (and a message) on failure.
int bound_socket(const Endpoint& bind_to) {
  const int fd = socket(bind_to.family, SOCK_DGRAM, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&bind_to.addr), bind_to.len) != 0) {
    std::perror("fib_sender: socket/bind");
    return -1;
  }
  return fd;
}

int blast(const Endpoint& dst, long count, const Endpoint& bind_to) {
  const int fd = bound_socket(bind_to);
  if (fd < 0) return 1;
  static std::array<iovec, kBuffers> iov{};
  static std::array<mmsghdr, kBuffers> msgs{};
  for (int i = 0; i < kBuffers; ++i) {
    iov[i] = {g_payloads[i].data(), g_payloads[i].size()};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    // the destination in every message: the kernel routes each datagram on its own
    msgs[i].msg_hdr.msg_name = const_cast<sockaddr_storage*>(&dst.addr);
    msgs[i].msg_hdr.msg_namelen = dst.len;
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
    std::fprintf(stderr, "fib_sender: nothing sent\n");
    return 1;
  }
  const double sys = seconds(r1.ru_stime) - seconds(r0.ru_stime);
  const double wall = std::chrono::duration<double>(t1 - t0).count();
  std::printf("%.1f %.1f %ld\n", sys / sent * 1e9, wall / sent * 1e9, errors);
  return 0;
}

int steps(const Endpoint& dst, const Endpoint& bind_to, bool connected) {
  const int fd = bound_socket(bind_to);
  if (fd < 0) return 1;
  if (connected && connect(fd, reinterpret_cast<const sockaddr*>(&dst.addr), dst.len) != 0) {
    std::perror("fib_sender: connect");
    return 1;
  }
  std::printf("ready %s\n", local_name(fd).c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    long n = 0;
    if (line.rfind("send ", 0) == 0 && parse_number<long>(line.substr(5), 1, 1L << 30, &n)) {
      long ok = 0, errors = 0;
      int last_error = 0;
      for (long i = 0; i < n; ++i) {
        const auto& payload = g_payloads[i % kBuffers];
        const ssize_t r =
            connected ? send(fd, payload.data(), payload.size(), 0)
                      : sendto(fd, payload.data(), payload.size(), 0,
                               reinterpret_cast<const sockaddr*>(&dst.addr), dst.len);
        if (r < 0) {
          ++errors;
          last_error = errno;
        } else {
          ++ok;
        }
      }
      std::printf("sent %ld err %ld %s\n", ok, errors, errors ? std::strerror(last_error) : "-");
    } else if (line == "name") {
      std::printf("name %s\n", local_name(fd).c_str());
    } else if (line == "quit") {
      break;
    } else {
      std::printf("unknown command: %s\n", line.c_str());
    }
    std::fflush(stdout);
  }
  close(fd);
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: fib_sender blast DST_ADDR COUNT SOURCE_PORT DEST_PORT BIND_ADDR|any\n"
               "       fib_sender steps DST_ADDR SOURCE_PORT DEST_PORT BIND_ADDR|any "
               "connected|unconnected\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) return usage();
  const std::string_view command = argv[1];
  fill_payloads();
  Endpoint dst, bind_to;
  std::uint16_t sport = 0, dport = 0;
  if (command == "blast") {
    long count = 0;
    if (!parse_number<long>(argv[3], 1, 1L << 40, &count) ||
        !parse_number<std::uint16_t>(argv[4], 1, 65535, &sport) ||
        !parse_number<std::uint16_t>(argv[5], 1, 65535, &dport) ||
        !make_endpoint(argv[2], dport, AF_UNSPEC, &dst) ||
        !make_endpoint(argv[6], sport, dst.family, &bind_to))
      return usage();
    return blast(dst, count, bind_to);
  }
  if (command == "steps") {
    const std::string_view mode = argv[6];
    if (!parse_number<std::uint16_t>(argv[3], 1, 65535, &sport) ||
        !parse_number<std::uint16_t>(argv[4], 1, 65535, &dport) ||
        !make_endpoint(argv[2], dport, AF_UNSPEC, &dst) ||
        !make_endpoint(argv[5], sport, dst.family, &bind_to) ||
        (mode != "connected" && mode != "unconnected"))
      return usage();
    return steps(dst, bind_to, mode == "connected");
  }
  return usage();
}
