// The kernel takes the engine's UDP GSO super-packets: written into a real TUN device
// (IFF_VNET_HDR) in a private network namespace, a batch of reply datagrams reaches the
// application's socket as the same datagrams, in order, from the server's address and
// port; the packet-by-packet form (for a kernel that refuses GSO) passes the kernel's own
// UDP checksum check, which a corrupted checksum does not. Root and /dev/net/tun, like the
// engine; skipped with the reason otherwise, or on a kernel older than Linux 6.2.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "client/tun/io/tun_device.hpp"
#include "client/tun/reply_packet.hpp"
#include "client/tun/udp_gso_batch.hpp"
#include "common/ip_packet.hpp"
#include "unit/client/client_packets.hpp"

namespace quicstep::client::tun {
namespace {

using namespace core::testing;  // NOLINT: the test packets

constexpr const char* kDevice = "qsgso0";
constexpr std::uint16_t kAppPort = 40000;

// Runs `body` in a child process inside a new network namespace; its words ("" when all
// held, "SKIP: why" to skip) come back through a pipe.
std::string in_private_netns(const std::function<std::string()>& body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string words = unshare(CLONE_NEWNET) != 0 ? "SKIP: unshare(CLONE_NEWNET) not permitted"
                                                   : body();
    [[maybe_unused]] const ssize_t n = write(pipe_fds[1], words.data(), words.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string words;
  char buf[512];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) words.append(buf, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the child died: " + std::to_string(status) + " " + words;
  return words;
}

struct Family {
  const char* client;
  const char* server;
  int af;
};

std::string bound_socket(const Family& f, int* out) {
  *out = socket(f.af, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage a{};
  socklen_t len;
  if (f.af == AF_INET) {
    auto* s = reinterpret_cast<sockaddr_in*>(&a);
    s->sin_family = AF_INET;
    s->sin_port = htons(kAppPort);
    inet_pton(AF_INET, f.client, &s->sin_addr);
    len = sizeof *s;
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(kAppPort);
    inet_pton(AF_INET6, f.client, &s->sin6_addr);
    len = sizeof *s;
  }
  if (bind(*out, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    return std::string("bind ") + f.client + ": " + std::strerror(errno);
  }
  return {};
}

// The next datagram at `fd` within `ms` and where it came from ("address port"), or empty.
std::pair<ByteVec, std::string> receive(int fd, int ms = 2000) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return {};
  ByteVec buf(65536);
  sockaddr_storage from{};
  socklen_t len = sizeof from;
  const ssize_t n = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
  buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  char text[INET6_ADDRSTRLEN] = {};
  std::uint16_t port;
  if (from.ss_family == AF_INET) {
    auto* s = reinterpret_cast<sockaddr_in*>(&from);
    inet_ntop(AF_INET, &s->sin_addr, text, sizeof text);
    port = ntohs(s->sin_port);
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&from);
    inet_ntop(AF_INET6, &s->sin6_addr, text, sizeof text);
    port = ntohs(s->sin6_port);
  }
  return {buf, std::string(text) + " " + std::to_string(port)};
}

std::string check_family(int tun, const Family& f) {
  int app = -1;
  if (std::string e = bound_socket(f, &app); !e.empty()) return e;
  const ByteVec outbound = f.af == AF_INET ? udp4(kAppPort, 443, ByteVec(1), f.client, f.server)
                                           : udp6(kAppPort, 443, ByteVec(1), f.client, f.server);
  const common::FlowKey flow = common::FlowKey::from_client(*common::parse_ip_packet(outbound));
  std::vector<ByteVec> payloads;
  UdpGsoBatch batch;
  std::vector<std::uint8_t> packet(kMaxReplyPacket);
  for (int i = 0; i < 12; ++i) {
    payloads.push_back(short_header(i < 11 ? 1200 : 321, static_cast<std::uint8_t>(0x40 | i)));
    const std::size_t n = write_reply_packet(flow, payloads.back(), packet);
    if (!batch.add(common::Bytes(packet.data(), n))) return "the batch refused datagram " + std::to_string(i);
  }
  const std::string source = std::string(f.server) + " 443";
  auto expect_all = [&](const std::string& how) -> std::string {
    for (std::size_t i = 0; i < payloads.size(); ++i) {
      const auto [got, from] = receive(app);
      if (got.empty()) return how + ": datagram " + std::to_string(i) + " never arrived";
      if (got != payloads[i]) {
        return how + ": datagram " + std::to_string(i) + " has " + std::to_string(got.size()) +
               " bytes, not the " + std::to_string(payloads[i].size()) + " sent, or other bytes";
      }
      if (from != source) return how + ": datagram from " + from + ", not " + source;
    }
    if (!receive(app, 200).first.empty()) return how + ": more datagrams than were sent";
    return {};
  };

  const auto form = batch.write_form();
  if (write(tun, form.data(), form.size()) != static_cast<ssize_t>(form.size())) {
    return std::string("write of the GSO super-packet: ") + std::strerror(errno);
  }
  if (std::string e = expect_all("as one GSO write"); !e.empty()) return e;

  std::vector<std::uint8_t> one(kVirtioNetHdrLength + kMaxReplyPacket);
  for (std::size_t i = 0; i < batch.segments(); ++i) {
    const std::size_t n = batch.segment(i, one);
    if (write(tun, one.data(), n) != static_cast<ssize_t>(n)) {
      return std::string("write of a segment: ") + std::strerror(errno);
    }
  }
  if (std::string e = expect_all("packet by packet"); !e.empty()) return e;

  // Replies built with the partial checksum (as the engine does with UDP GSO): as one
  // super-packet, and one by one as batches of one.
  UdpGsoBatch partial_batch;
  for (const ByteVec& payload : payloads) {
    const std::size_t n = write_reply_packet(flow, payload, packet, ReplyChecksum::partial);
    if (!partial_batch.add(common::Bytes(packet.data(), n))) return "the batch refused a partial reply";
  }
  const auto partial_form = partial_batch.write_form();
  if (write(tun, partial_form.data(), partial_form.size()) != static_cast<ssize_t>(partial_form.size())) {
    return std::string("write of the partial-checksum super-packet: ") + std::strerror(errno);
  }
  if (std::string e = expect_all("partial checksums, one GSO write"); !e.empty()) return e;
  for (const ByteVec& payload : payloads) {
    UdpGsoBatch alone;
    const std::size_t n = write_reply_packet(flow, payload, packet, ReplyChecksum::partial);
    if (!alone.add(common::Bytes(packet.data(), n))) return "a batch refused a lone reply";
    const auto form = alone.write_form();
    if (write(tun, form.data(), form.size()) != static_cast<ssize_t>(form.size())) {
      return std::string("write of a batch of one: ") + std::strerror(errno);
    }
  }
  if (std::string e = expect_all("partial checksums, batches of one"); !e.empty()) return e;
  {
    // Its control: the same partial packet behind a zero header is a bad checksum.
    const std::size_t n = write_reply_packet(flow, payloads[0], packet, ReplyChecksum::partial);
    std::vector<std::uint8_t> plain(kVirtioNetHdrLength, 0);
    plain.insert(plain.end(), packet.begin(), packet.begin() + static_cast<std::ptrdiff_t>(n));
    [[maybe_unused]] const ssize_t w = write(tun, plain.data(), plain.size());
    if (!receive(app, 300).first.empty()) return "a partial checksum without NEEDS_CSUM was delivered";
  }

  // The control: the kernel checks a plain packet's UDP checksum on this path.
  const std::size_t n = batch.segment(0, one);
  one[n - 1] ^= 0x01;
  [[maybe_unused]] const ssize_t w = write(tun, one.data(), n);
  if (!receive(app, 300).first.empty()) return "a datagram with a wrong checksum was delivered";
  close(app);
  return {};
}

TEST(TunUdpGso, TheKernelCutsASuperPacketBackIntoTheSameDatagrams) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a TUN device in a private namespace)";
  const std::string words = in_private_netns([]() -> std::string {
    auto tun = open_tun(kDevice, /*vnet_header=*/true);
    if (!tun.ok()) return "SKIP: " + tun.error().message;
    (void)stop_persisting(tun->get(), kDevice);  // goes with the descriptor
    if (!tun_takes_udp_gso(tun->get())) return "SKIP: this kernel takes no UDP GSO on a TUN (< 6.2)";
    const std::string setup =
        std::string("ip link set lo up && ip link set ") + kDevice + " up && ip addr add " +
        "198.18.77.2/24 dev " + kDevice + " && ip -6 addr add 2001:db8:77::2/64 dev " + kDevice +
        " nodad";
    if (std::system(setup.c_str()) != 0) return "could not set up " + std::string(kDevice);
    for (const Family& f : {Family{"198.18.77.2", "198.18.77.1", AF_INET},
                            Family{"2001:db8:77::2", "2001:db8:77::1", AF_INET6}}) {
      if (std::string e = check_family(tun->get(), f); !e.empty()) return std::string(f.client) + ": " + e;
    }
    return {};
  });
  if (words.rfind("SKIP: ", 0) == 0) GTEST_SKIP() << words.substr(6);
  EXPECT_EQ(words, "");
}

}  // namespace
}  // namespace quicstep::client::tun
