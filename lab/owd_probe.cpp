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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Creates a UDP socket inside the named namespace (then returns to ours).
int socket_in(const std::string& netns, int family) {
  int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int target = open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (self < 0 || target < 0) throw std::runtime_error("cannot open namespace `" + netns + "'");
  if (setns(target, CLONE_NEWNET) < 0) throw std::runtime_error("setns " + netns + ": " + strerror(errno));
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int err = errno;
  setns(self, CLONE_NEWNET);
  close(self);
  close(target);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + strerror(err));
  return fd;
}

struct Probe {
  std::uint64_t seq;
  std::int64_t sent_ns;
};

}  // namespace

int main(int argc, char** argv) {
  std::string from, to, dst;
  int port = 9999;
  double rate = 1000;
  std::uint64_t count = 1000;
  std::size_t size = 64;
  CLI::App app{"One-way delay of a paced UDP stream between two network namespaces."};
  app.add_option("--from", from, "sender's namespace")->required();
  app.add_option("--to", to, "receiver's namespace")->required();
  app.add_option("--dst", dst, "receiver's address (IPv4 or IPv6)")->required();
  app.add_option("--port", port, "UDP port")->check(CLI::Range(1, 65535));
  app.add_option("--rate", rate, "packets per second")->check(CLI::Range(1.0, 1e6));
  app.add_option("--count", count, "packets to send")->check(CLI::Range(1, 10'000'000));
  app.add_option("--size", size, "UDP payload bytes")->check(CLI::Range(16, 1400));
  CLI11_PARSE(app, argc, argv);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  int family = AF_INET;
  auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, dst.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    addr_len = sizeof *a4;
  } else if (inet_pton(AF_INET6, dst.c_str(), &a6->sin6_addr) == 1) {
    family = AF_INET6;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    addr_len = sizeof *a6;
  } else {
    std::fprintf(stderr, "qs_owd_probe: not an IPv4 or IPv6 address: `%s'\n", dst.c_str());
    return 2;
  }

  int rx, tx;
  try {
    rx = socket_in(to, family);
    tx = socket_in(from, family);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_owd_probe: %s\n", e.what());
    return 1;
  }
  int on = 1;
  setsockopt(rx, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  int rcvbuf = 8 << 20;
  setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  sockaddr_storage bind_addr = addr;  // the destination address itself, in the receiver's ns
  if (bind(rx, reinterpret_cast<sockaddr*>(&bind_addr), addr_len) < 0) {
    std::fprintf(stderr, "qs_owd_probe: bind %s:%d: %s\n", dst.c_str(), port, strerror(errno));
    return 1;
  }

  std::vector<std::int64_t> owd;  // ns, in arrival order
  owd.reserve(count);
  std::uint64_t reordered = 0;
  std::atomic<bool> sending_done{false};
  std::atomic<std::int64_t> last_send_ns{0};
  std::thread receiver([&] {
    std::vector<char> buf(2048);
    char ctrl[256];
    std::uint64_t highest = 0;
    while (owd.size() < count) {
      pollfd pfd{rx, POLLIN, 0};
      int pr = poll(&pfd, 1, 200);
      if (pr <= 0) {
        // Done when sending ended more than 2 s ago and nothing comes any more.
        if (sending_done && realtime_ns() - last_send_ns > 2'000'000'000) break;
        continue;
      }
      iovec iov{buf.data(), buf.size()};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = ctrl;
      msg.msg_controllen = sizeof ctrl;
      ssize_t n = recvmsg(rx, &msg, 0);
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
      if (p.seq < highest) ++reordered;
      highest = std::max(highest, p.seq);
      owd.push_back(rx_ns - p.sent_ns);
    }
  });

  std::vector<char> payload(size, 0);
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  const std::int64_t interval = static_cast<std::int64_t>(1e9 / rate);
  std::int64_t t0 = realtime_ns();
  std::uint64_t sent = 0, send_errors = 0;
  for (std::uint64_t seq = 0; seq < count; ++seq) {
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    Probe p{seq, realtime_ns()};
    std::memcpy(payload.data(), &p, sizeof p);
    if (sendto(tx, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&addr), addr_len) < 0)
      ++send_errors;
    else
      ++sent;
    last_send_ns = realtime_ns();
    next.tv_nsec += interval;
    while (next.tv_nsec >= 1'000'000'000) {
      next.tv_nsec -= 1'000'000'000;
      ++next.tv_sec;
    }
  }
  double elapsed = static_cast<double>(realtime_ns() - t0) / 1e9;
  sending_done = true;
  receiver.join();

  std::vector<std::int64_t> sorted = owd;
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
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(send_errors),
              sorted.size(), static_cast<long long>(sent) - static_cast<long long>(sorted.size()),
              static_cast<unsigned long long>(reordered), elapsed > 0 ? static_cast<double>(sent) / elapsed : 0.0,
              pct(0), pct(0.5), mean, pct(0.99), sorted.empty() ? 0.0 : static_cast<double>(sorted.back()) / 1e3);
  close(rx);
  close(tx);
  return sorted.empty() ? 1 : 0;
}
