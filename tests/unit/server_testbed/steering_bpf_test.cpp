// The steering BPF program in the kernel (root only; skipped otherwise):
//  - the decision and counters through BPF_PROG_TEST_RUN on the tc entry point, over frames
//    built with the shared PacketBuilder (SK_REUSEPORT programs have no test-run support);
//  - the real SK_REUSEPORT program over a REUSEPORT_SOCKARRAY of UDP sockets on loopback, in
//    a private network namespace (unshare), with steering on and off.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "server_testbed/cid_codec.hpp"
#include "server_testbed/steering_loader.hpp"
#include "support/packet_builder.hpp"
#include "unit/common/quic_test_vectors.hpp"

namespace quicstep::server_testbed {
namespace {

using test::ByteVec;
using test::PacketBuilder;

constexpr int kTestBase = 100;  // the tc entry returns 100 + verdict when it does not steer

ByteVec ethernet(const ByteVec& ip, std::uint16_t ethertype) {
  ByteVec frame = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2,
                   static_cast<std::uint8_t>(ethertype >> 8), static_cast<std::uint8_t>(ethertype)};
  frame.insert(frame.end(), ip.begin(), ip.end());
  return frame;
}

ByteVec udp4(const ByteVec& payload) {
  return ethernet(PacketBuilder().ipv4("198.18.210.2", "198.18.210.10").udp(40000, 443)
                      .payload(payload).build(), 0x0800);
}

ByteVec udp6(const ByteVec& payload) {
  return ethernet(PacketBuilder().ipv6("2001:db8:210::2", "2001:db8:210::10").udp(40000, 443)
                      .payload(payload).build(), 0x86dd);
}

class SteeringBpf : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF)";
    auto loaded = Steering::open();
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    steering_ = std::move(*loaded);
    ASSERT_TRUE(steering_->set_config(to_bpf_config(codec_.config(), true)).ok());
  }

  int run(const ByteVec& frame) {
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(),
                .data_size_in = static_cast<__u32>(frame.size()), .repeat = 1);
    EXPECT_EQ(bpf_prog_test_run_opts(steering_->test_prog_fd(), &opts), 0) << strerror(errno);
    return static_cast<int>(opts.retval);
  }

  ByteVec short_header(std::uint32_t worker) {
    ByteVec p{0x43};
    ByteVec cid(codec_.cid_len());
    codec_.encode(worker, ByteVec(18, 0x11), cid);
    p.insert(p.end(), cid.begin(), cid.end());
    p.insert(p.end(), 30, 0xab);
    return p;
  }

  CidCodec codec_ = *CidCodec::create({0, 16, 4, std::nullopt});
  std::unique_ptr<Steering> steering_;
};

TEST_F(SteeringBpf, TableThroughTestRun) {
  ByteVec handshake{0xe0, 0, 0, 0, 1, 16};
  {
    ByteVec cid(16);
    codec_.encode(2, ByteVec(18, 0x22), cid);
    handshake.insert(handshake.end(), cid.begin(), cid.end());
    handshake.insert(handshake.end(), {0x00, 0x10});
    handshake.insert(handshake.end(), 50, 0x00);
  }
  const ByteVec rfc_initial = testing::from_hex(testing::kV1ClientInitial);
  const ByteVec one = short_header(1);
  const ByteVec cut_in_dcid(one.begin(), one.begin() + 9);
  struct Row {
    const char* what;
    ByteVec frame;
    int expected;
  };
  const std::vector<Row> rows = {
      {"IPv4 short header, worker 1", udp4(short_header(1)), 1},
      {"IPv6 short header, worker 3", udp6(short_header(3)), 3},
      {"IPv4 Handshake, worker 2", udp4(handshake), 2},
      {"RFC 9001 client Initial (random DCID)", udp4(rfc_initial), kTestBase + QS_STEER_FALLBACK},
      {"empty UDP payload", udp4({}), kTestBase + QS_STEER_MALFORMED},
      {"short header cut inside the DCID",
       udp4(cut_in_dcid),
       kTestBase + QS_STEER_MALFORMED},
      {"long header cut before the DCID length", udp6({0xc0, 0, 0, 0, 1}),
       kTestBase + QS_STEER_MALFORMED},
      {"long header DCID length 200", udp4({0xc0, 0, 0, 0, 1, 200, 1, 2, 3}),
       kTestBase + QS_STEER_MALFORMED},
      {"unknown version, empty DCID", udp4({0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 0, 0}),
       kTestBase + QS_STEER_FALLBACK},
  };
  const qs_steer_counters before = steering_->counters();
  for (const Row& row : rows) EXPECT_EQ(run(row.frame), row.expected) << row.what;
  const qs_steer_counters after = steering_->counters();
  EXPECT_EQ(after.packets - before.packets, rows.size());
  EXPECT_EQ(after.steered - before.steered, 3u);
  EXPECT_EQ(after.fallback - before.fallback, 2u);
  EXPECT_EQ(after.malformed - before.malformed, 4u);
}

TEST_F(SteeringBpf, DcidsOfEveryLengthAndEveryTruncation) {
  for (std::uint8_t n = 0; n <= 25; ++n) {
    ByteVec p{0xc0, 0, 0, 0, 1, n};
    p.insert(p.end(), n, 0x7f);
    p.insert(p.end(), 20, 0);
    const int v = run(udp4(p));
    EXPECT_EQ(v, kTestBase + (n > 20 ? QS_STEER_MALFORMED : QS_STEER_FALLBACK)) << int(n);
  }
  const ByteVec full = short_header(3);
  for (std::size_t n = 0; n <= full.size(); ++n) {
    const int v = run(udp6(ByteVec(full.begin(), full.begin() + static_cast<long>(n))));
    EXPECT_EQ(v, n >= 17 ? 3 : kTestBase + QS_STEER_MALFORMED) << n;
  }
}

TEST_F(SteeringBpf, RandomBytesAreCountedNeverMisSteered) {
  std::mt19937 rng(1);
  const qs_steer_counters before = steering_->counters();
  for (int i = 0; i < 2000; ++i) {
    ByteVec p(rng() % 80);
    for (auto& b : p) b = static_cast<std::uint8_t>(rng());
    const int v = run(i % 2 ? udp4(p) : udp6(p));
    EXPECT_TRUE((v >= 0 && v < 4) || v == kTestBase + QS_STEER_FALLBACK ||
                v == kTestBase + QS_STEER_MALFORMED) << v;
  }
  const qs_steer_counters after = steering_->counters();
  EXPECT_EQ(after.packets - before.packets, 2000u);
}

TEST_F(SteeringBpf, DisabledConfigNeverSteers) {
  ASSERT_TRUE(steering_->set_config(to_bpf_config(codec_.config(), false)).ok());
  EXPECT_EQ(run(udp4(short_header(1))), kTestBase + QS_STEER_DISABLED);
}

// A private network namespace with lo up, so the sockets below touch nothing else.
bool enter_private_netns() {
  if (unshare(CLONE_NEWNET) != 0) return false;
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  const bool ok = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
                  (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
  close(fd);
  return ok;
}

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) close(fd); }
};

// Four workers' sockets; 64 senders (distinct 4-tuples) each send one short-header packet
// naming worker i % 4. Steering on: every packet reaches its worker. Off: the kernel hash
// scatters them.
std::size_t misdelivered(Steering& steering, const CidCodec& codec, bool enabled) {
  constexpr int kWorkers = 4;
  std::array<Fd, kWorkers> workers;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  for (int i = 0; i < kWorkers; ++i) {
    workers[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    const int one = 1;
    setsockopt(workers[i].fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    EXPECT_EQ(bind(workers[i].fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    if (i == 0) getsockname(workers[0].fd, reinterpret_cast<sockaddr*>(&addr), &len);
    EXPECT_TRUE(steering.add_socket(static_cast<std::uint32_t>(i), workers[i].fd).ok());
  }
  EXPECT_TRUE(steering.set_config(to_bpf_config(codec.config(), enabled)).ok());
  EXPECT_TRUE(steering.attach(workers[0].fd).ok());
  for (int s = 0; s < 64; ++s) {
    Fd sender{socket(AF_INET, SOCK_DGRAM, 0)};
    ByteVec p{0x40};
    ByteVec cid(codec.cid_len());
    codec.encode(static_cast<std::uint32_t>(s % kWorkers), ByteVec(18, static_cast<std::uint8_t>(s)), cid);
    p.insert(p.end(), cid.begin(), cid.end());
    p.insert(p.end(), 30, 0);
    sendto(sender.fd, p.data(), p.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  usleep(100 * 1000);
  std::size_t wrong = 0, got = 0;
  for (int i = 0; i < kWorkers; ++i) {
    std::array<std::uint8_t, 256> buf{};
    for (;;) {
      const long n = recv(workers[i].fd, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      ++got;
      auto owner = codec.decode(std::span<const std::uint8_t>(buf.data() + 1, codec.cid_len()));
      if (!owner.ok() || *owner != static_cast<std::uint32_t>(i)) ++wrong;
    }
  }
  EXPECT_EQ(got, 64u);
  return wrong;
}

TEST_F(SteeringBpf, ReuseportSocketsGetTheirOwnPackets) {
  if (!enter_private_netns()) GTEST_SKIP() << "cannot create a network namespace";
  const qs_steer_counters before = steering_->counters();
  EXPECT_EQ(misdelivered(*steering_, codec_, true), 0u);
  const qs_steer_counters after = steering_->counters();
  EXPECT_EQ(after.steered - before.steered, 64u);
  EXPECT_EQ(after.select_failed - before.select_failed, 0u);
}

TEST_F(SteeringBpf, WithoutSteeringTheHashScatters) {
  if (!enter_private_netns()) GTEST_SKIP() << "cannot create a network namespace";
  // 64 random 4-tuples over 4 sockets: P(no packet misdelivered) = (1/4)^64.
  EXPECT_GT(misdelivered(*steering_, codec_, false), 0u);
  EXPECT_GT(steering_->counters().disabled, 0u);
}

}  // namespace
}  // namespace quicstep::server_testbed
