// qs_owd_probe: sends a paced UDP stream from one network namespace to another and
// reports the one-way delay of each packet. Both sockets live in this one process (a
// socket stays in the namespace it was created in), and every namespace shares the
// machine's clock, so one-way delay is exact: kernel receive timestamp minus send time.
//
//   qs_owd_probe --from qs-client --to qs-srv1 --dst 198.18.10.10 --rate 1000 --count 5000
//
// Prints one JSON object: sent, received, lost, reordered, send rate achieved, and the
// one-way delay's min/p50/mean/p99/max in microseconds.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"

namespace {

std::int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Creates a UDP socket inside the named namespace (then returns to ours). Failures: the
// namespace cannot be opened or entered, the socket's errno text.
quicstep::common::Result<int, quicstep::common::Failure> socket_in(const std::string& netns,
                                                                   int family) {
  using quicstep::common::Failure;
  const int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int target = open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
  auto close_both = [&] {
    if (self >= 0) close(self);
    if (target >= 0) close(target);
  };
  if (self < 0 || target < 0) {
    close_both();
    return Failure("cannot open namespace `" + netns + "'");
  }
  if (setns(target, CLONE_NEWNET) < 0) {
    Failure failure("setns " + netns + ": " + strerror(errno));
    close_both();
    return failure;
  }
  const int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int err = errno;
  setns(self, CLONE_NEWNET);
  close_both();
  if (fd < 0) return Failure(std::string("socket: ") + strerror(err));
  return fd;
}

struct Probe {
  std::uint64_t seq;
  std::int64_t sent_ns;
};

struct Destination {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
};

// Parses an IPv4 or IPv6 literal; false when it is neither.
bool parse_destination(const std::string& text, int port, Destination& out) {
  auto* a4 = reinterpret_cast<sockaddr_in*>(&out.addr);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&out.addr);
  if (inet_pton(AF_INET, text.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    out.len = sizeof *a4;
    out.family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    out.len = sizeof *a6;
    out.family = AF_INET6;
    return true;
  }
  return false;
}

struct Received {
  std::vector<std::int64_t> owd_ns;  // in arrival order
  std::uint64_t reordered = 0;
};

// Receives probes until `count` arrived, or until nothing came for 2 s after the sender
// finished. One-way delay: the kernel's receive timestamp minus the send time.
void receive_probes(int fd, std::uint64_t count, const std::atomic<bool>& sending_done,
                    const std::atomic<std::int64_t>& last_send_ns, Received& out) {
  std::vector<char> buf(2048);
  char ctrl[256];
  std::uint64_t highest = 0;
  while (out.owd_ns.size() < count) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 200) <= 0) {
      if (sending_done && realtime_ns() - last_send_ns > 2'000'000'000) break;
      continue;
    }
    iovec iov{buf.data(), buf.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    ssize_t n = recvmsg(fd, &msg, 0);
    if (n < static_cast<ssize_t>(sizeof(Probe))) continue;
    std::int64_t rx_ns = realtime_ns();
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        rx_ns = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
      }
    Probe p;
    std::memcpy(&p, buf.data(), sizeof p);
    if (p.seq < highest) ++out.reordered;
    highest = std::max(highest, p.seq);
    out.owd_ns.push_back(rx_ns - p.sent_ns);
  }
}

struct SendResult {
  std::uint64_t sent = 0;
  std::uint64_t errors = 0;
  double seconds = 0;
};

// Sends `count` probes paced at `rate` per second (absolute deadlines: a late wake-up
// sends what is due at once rather than slowing the stream down).
SendResult send_probes(int fd, const Destination& dst, double rate, std::uint64_t count,
                       std::size_t size, std::atomic<std::int64_t>& last_send_ns) {
  std::vector<char> payload(size, 0);
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  const auto interval = static_cast<std::int64_t>(1e9 / rate);
  SendResult r;
  std::int64_t t0 = realtime_ns();
  for (std::uint64_t seq = 0; seq < count; ++seq) {
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    Probe p{seq, realtime_ns()};
    std::memcpy(payload.data(), &p, sizeof p);
    if (sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&dst.addr), dst.len) < 0)
      ++r.errors;
    else
      ++r.sent;
    last_send_ns = realtime_ns();
    next.tv_nsec += interval;
    while (next.tv_nsec >= 1'000'000'000) {
      next.tv_nsec -= 1'000'000'000;
      ++next.tv_sec;
    }
  }
  r.seconds = static_cast<double>(realtime_ns() - t0) / 1e9;
  return r;
}

void print_report(const SendResult& s, const Received& rx) {
  std::vector<std::int64_t> sorted = rx.owd_ns;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) {
    if (sorted.empty()) return 0.0;
    return static_cast<double>(sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * sorted.size()))]) / 1e3;
  };
  double mean = 0;
  for (auto v : sorted) mean += static_cast<double>(v) / 1e3;
  if (!sorted.empty()) mean /= static_cast<double>(sorted.size());
  std::printf("{\"sent\": %llu, \"send_errors\": %llu, \"received\": %zu, \"lost\": %lld, "
              "\"reordered\": %llu, \"rate_pps\": %.1f, \"owd_us\": {\"min\": %.1f, \"p50\": %.1f, "
              "\"mean\": %.1f, \"p99\": %.1f, \"max\": %.1f}}\n",
              static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.errors),
              sorted.size(), static_cast<long long>(s.sent) - static_cast<long long>(sorted.size()),
              static_cast<unsigned long long>(rx.reordered), s.seconds > 0 ? static_cast<double>(s.sent) / s.seconds : 0.0,
              pct(0), pct(0.5), mean, pct(0.99), sorted.empty() ? 0.0 : static_cast<double>(sorted.back()) / 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  std::string from, to, dst_text;
  int port = 9999;
  double rate = 1000;
  std::uint64_t count = 1000;
  std::size_t size = 64;
  CLI::App app{"One-way delay of a paced UDP stream between two network namespaces."};
  app.add_option("--from", from, "sender's namespace")->required();
  app.add_option("--to", to, "receiver's namespace")->required();
  app.add_option("--dst", dst_text, "receiver's address (IPv4 or IPv6)")->required();
  app.add_option("--port", port, "UDP port")->check(CLI::Range(1, 65535));
  app.add_option("--rate", rate, "packets per second")->check(CLI::Range(1.0, 1e6));
  app.add_option("--count", count, "packets to send")->check(CLI::Range(1, 10'000'000));
  app.add_option("--size", size, "UDP payload bytes")->check(CLI::Range(16, 1400));
  CLI11_PARSE(app, argc, argv);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  Destination dst;
  if (!parse_destination(dst_text, port, dst)) {
    std::fprintf(stderr, "qs_owd_probe: not an IPv4 or IPv6 address: `%s'\n", dst_text.c_str());
    return 2;
  }
  const auto rx_socket = socket_in(to, dst.family);
  const auto tx_socket = rx_socket ? socket_in(from, dst.family) : rx_socket;
  if (!tx_socket) {
    std::fprintf(stderr, "qs_owd_probe: %s\n", tx_socket.error().message.c_str());
    return 1;
  }
  const int rx = *rx_socket, tx = *tx_socket;
  int on = 1;
  setsockopt(rx, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  int rcvbuf = 8 << 20;
  setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  if (bind(rx, reinterpret_cast<const sockaddr*>(&dst.addr), dst.len) < 0) {
    std::fprintf(stderr, "qs_owd_probe: bind %s:%d: %s\n", dst_text.c_str(), port, strerror(errno));
    return 1;
  }

  Received received;
  received.owd_ns.reserve(count);
  std::atomic<bool> sending_done{false};
  std::atomic<std::int64_t> last_send_ns{0};
  std::thread receiver([&] { receive_probes(rx, count, sending_done, last_send_ns, received); });
  SendResult sent = send_probes(tx, dst, rate, count, size, last_send_ns);
  sending_done = true;
  receiver.join();
  print_report(sent, received);
  close(rx);
  close(tx);
  return received.owd_ns.empty() ? 1 : 0;
}
