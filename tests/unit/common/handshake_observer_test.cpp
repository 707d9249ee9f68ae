#include "common/handshake_observer.hpp"

#include <gtest/gtest.h>

#include <pcap/pcap.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/link_layer.hpp"

namespace quicstep::common {
namespace {

struct Frame {
  Timestamp time;
  std::vector<std::uint8_t> ip;
};

// The IP datagrams of a capture in tests/data (see its README for what each holds).
std::vector<Frame> read_capture(const std::string& name) {
  const std::string path = std::string(QS_TEST_DATA_DIR) + "/" + name;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
  EXPECT_NE(p, nullptr) << errbuf;
  std::vector<Frame> frames;
  if (p == nullptr) return frames;
  const auto link = static_cast<LinkType>(pcap_datalink(p));
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  while (pcap_next_ex(p, &h, &data) == 1) {
    auto ip = ip_datagram_of_frame(link, Bytes(data, h->caplen));
    if (!ip) continue;
    frames.push_back({Timestamp{h->ts.tv_sec * 1'000'000'000LL + h->ts.tv_usec * 1000LL},
                      std::vector<std::uint8_t>(ip->begin(), ip->end())});
  }
  pcap_close(p);
  return frames;
}

struct HelloFound {
  std::size_t frame = 0;  // 1-based, as in the capture README
  ClientHelloSeen hello;
};

std::vector<HelloFound> hellos_in(const std::vector<Frame>& frames, HandshakeObserverConfig config = {}) {
  HandshakeObserver observer(config);
  std::vector<HelloFound> found;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    auto seen = observer.observe(frames[i].ip, frames[i].time);
    if (seen.client_hello) found.push_back({i + 1, *seen.client_hello});
  }
  return found;
}

// Chromium 156's post-quantum ClientHello spans two Initial datagrams, with the SNI bytes
// only in the second one (tests/data/README.md).
TEST(HandshakeObserver, ReadsSniOfChromiumHelloSplitOverTwoInitials) {
  for (const char* file : {"chromium_quic_blocked.pcap", "chromium_quic_blocked_v6.pcap"}) {
    auto found = hellos_in(read_capture(file));
    ASSERT_EQ(found.size(), 1u) << file;
    EXPECT_EQ(found[0].hello.server_name, "blocked.test");
    EXPECT_EQ(found[0].hello.packets, 2u);
    EXPECT_EQ(found[0].hello.alpn, std::vector<std::string>{"h3"});
    EXPECT_GT(found[0].hello.length, 1500u) << "a post-quantum ClientHello";
    EXPECT_TRUE(std::find(found[0].hello.key_share_groups.begin(), found[0].hello.key_share_groups.end(),
                          0x11ec) != found[0].hello.key_share_groups.end())
        << "X25519MLKEM768 key share expected";
  }
}

// The GFW was measured to read only the first datagram: it misses this SNI.
TEST(HandshakeObserver, FirstDatagramOnlyMissesSplitHello) {
  HandshakeObserverConfig config;
  config.first_datagram_only = true;
  HandshakeObserver observer(config);
  std::size_t errors = 0;
  for (const auto& f : read_capture("chromium_quic_blocked.pcap")) {
    auto seen = observer.observe(f.ip, f.time);
    EXPECT_FALSE(seen.client_hello.has_value());
    if (seen.client_hello_error) ++errors;
  }
  EXPECT_EQ(errors, 1u);
}

TEST(HandshakeObserver, ReadsGtlsclientHelloInOneInitial) {
  auto found = hellos_in(read_capture("gtlsclient_quic.pcap"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame, 1u);
  EXPECT_EQ(found[0].hello.server_name, "localhost");
  EXPECT_EQ(found[0].hello.packets, 1u);
}

TEST(HandshakeObserver, ReadsTlsOverTcpSni) {
  auto found = hellos_in(read_capture("chromium_tls_tcp_blocked.pcap"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].hello.server_name, "blocked.test");
  EXPECT_EQ(found[0].hello.packets, 2u);
  EXPECT_EQ(found[0].hello.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
}

TEST(HandshakeObserver, ReadsDnsNamesBothWays) {
  HandshakeObserver observer;
  std::size_t queries = 0;
  std::size_t answers = 0;
  bool saw_blocked = false;
  for (const auto& f : read_capture("dns_queries.pcap")) {
    auto seen = observer.observe(f.ip, f.time);
    ASSERT_TRUE(seen.ip.has_value());
    if (seen.ip->payload.empty()) continue;  // TCP handshake and ACKs
    ASSERT_TRUE(seen.dns.has_value());
    (seen.dns->header.qr ? answers : queries)++;
    EXPECT_EQ(seen.from_client, !seen.dns->header.qr);
    for (const auto& q : seen.dns->questions) saw_blocked |= q.name == "blocked.test";
  }
  EXPECT_GT(queries, 0u);
  EXPECT_EQ(queries, answers);
  EXPECT_TRUE(saw_blocked);
}

TEST(HandshakeObserver, DecryptsEveryInitialOfBothSides) {
  HandshakeObserver observer;
  for (const auto& f : read_capture("chromium_quic_blocked.pcap")) observer.observe(f.ip, f.time);
  EXPECT_EQ(observer.counters().quic_decrypt_failures, 0u);
  EXPECT_EQ(observer.counters().quic_initials_decrypted, 4u);  // 2 client, 2 server
  EXPECT_EQ(observer.flow_count(), 1u);
}

// Every truncation of every packet of a real capture is handled: no crash, and ASan/UBSan
// would catch a read past the end.
TEST(HandshakeObserver, TruncatedPacketsNeverCrash) {
  auto frames = read_capture("chromium_quic_blocked.pcap");
  HandshakeObserver observer;
  for (const auto& f : frames) {
    for (std::size_t n = 0; n <= f.ip.size(); n += (n < 80 ? 1 : 37)) {
      std::vector<std::uint8_t> cut(f.ip.begin(), f.ip.begin() + static_cast<std::ptrdiff_t>(n));
      observer.observe(cut, f.time);
    }
  }
  EXPECT_GT(observer.counters().ip_errors, 0u);
}

TEST(HandshakeObserver, FlowTableIsBounded) {
  HandshakeObserverConfig config;
  config.max_flows = 4;
  config.flow_idle_timeout = std::chrono::seconds(10);
  HandshakeObserver observer(config);
  auto frames = read_capture("dns_queries.pcap");  // UDP/53: not tracked as flows
  auto quic = read_capture("gtlsclient_quic.pcap");
  ASSERT_FALSE(quic.empty());
  // Re-address the first Initial from many source ports: each is a new flow.
  for (std::uint16_t port = 1000; port < 1020; ++port) {
    auto ip = quic[0].ip;
    ip[20] = port >> 8;  // IPv4 header without options: UDP source port at 20..21
    ip[21] = port & 0xff;
    observer.observe(ip, quic[0].time);
    EXPECT_LE(observer.flow_count(), 4u);
  }
  EXPECT_EQ(observer.counters().flows_evicted, 16u);
  observer.observe(quic[0].ip, quic[0].time + std::chrono::seconds(11));
  EXPECT_EQ(observer.flow_count(), 1u);
  EXPECT_EQ(observer.counters().flows_expired, 4u);
}

}  // namespace
}  // namespace quicstep::common
