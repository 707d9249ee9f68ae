#include "lab/censor/censor_core.hpp"

#include <gtest/gtest.h>

#include "censor_packets.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::censor {
namespace {

using namespace testing;

Blocklist lab_blocklist() {
  Blocklist list;
  list.load("blocked.test\n*.blocked.test\n");
  return list;
}

CensorCore make_core(CensorConfig config = {}, std::uint64_t seed = 1) {
  return CensorCore(std::move(config), lab_blocklist(), seed);
}

// --- Real captures (tests/data/README.md) ---

// Chromium's post-quantum ClientHello spans two Initials, the SNI only in the second: the
// reassembling censor blocks at frame 2 and drops the rest of the flow, both directions.
TEST(CensorCore, ReassemblingModeBlocksChromiumQuic) {
  for (const char* file : {"chromium_quic_blocked.pcap", "chromium_quic_blocked_v6.pcap"}) {
    auto core = make_core();
    auto frames = read_capture(file);
    ASSERT_GE(frames.size(), 5u) << file;
    std::vector<Action> actions;
    for (const auto& f : frames) actions.push_back(core.decide(f.ip, f.time).action);
    // The ClientHello completes in the second client Initial (frame 2, v6: frame 3).
    const std::size_t hello = std::string(file).find("v6") != std::string::npos ? 2 : 1;
    for (std::size_t i = 0; i < hello; ++i) EXPECT_EQ(actions[i], Action::pass) << file << " frame " << i + 1;
    for (std::size_t i = hello; i < actions.size(); ++i) {
      EXPECT_EQ(actions[i], Action::drop) << file << " frame " << i + 1;
    }
    EXPECT_EQ(core.counters().quic_sni_blocks, 1u);
    EXPECT_EQ(core.residual_count(), 1u);
    auto log = core.take_decisions();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].rule, Rule::quic_sni);
    EXPECT_EQ(log[0].name, "blocked.test");
    EXPECT_EQ(log[0].matched, "blocked.test");
    EXPECT_EQ(log[0].flow.server_port, 443);
  }
}

// The GFW-faithful mode reads only the first Initial datagram: it misses Chromium's SNI.
TEST(CensorCore, FirstDatagramOnlyModeMissesChromiumQuic) {
  CensorConfig config;
  config.first_datagram_only = true;
  auto core = make_core(config);
  for (const auto& f : read_capture("chromium_quic_blocked.pcap")) {
    EXPECT_EQ(core.decide(f.ip, f.time).action, Action::pass);
  }
  EXPECT_EQ(core.counters().quic_sni_blocks, 0u);
  EXPECT_TRUE(core.take_decisions().empty());
}

// A ClientHello that fits in one Initial is caught by the first-datagram-only mode too.
TEST(CensorCore, FirstDatagramOnlyModeBlocksASingleDatagramHello) {
  CensorConfig config;
  config.first_datagram_only = true;
  auto core = make_core(config);
  EXPECT_EQ(core.decide(quic_initial("www.blocked.test", 40000), at_s(0)).action, Action::drop);
  EXPECT_EQ(core.take_decisions()[0].matched, "*.blocked.test");
}

// TLS over TCP: the ClientHello is in two segments (frames 4, 5); at frame 5 the censor
// drops it and injects a RST to each end with the sequence numbers each end expects.
TEST(CensorCore, TcpSniInjectsRstsToBothEnds) {
  auto core = make_core();
  auto frames = read_capture("chromium_tls_tcp_blocked.pcap");
  ASSERT_GE(frames.size(), 6u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(core.decide(frames[i].ip, frames[i].time).action, Action::pass);
  Verdict v = core.decide(frames[4].ip, frames[4].time);
  ASSERT_EQ(v.action, Action::drop_and_inject);
  EXPECT_EQ(v.rule, Rule::tcp_sni);
  ASSERT_EQ(v.inject.size(), 2u);
  auto hello = common::parse_ip_packet(frames[4].ip);
  auto to_server = common::parse_ip_packet(v.inject[0]);
  auto to_client = common::parse_ip_packet(v.inject[1]);
  ASSERT_TRUE(hello.ok() && to_server.ok() && to_client.ok());
  EXPECT_EQ(to_server->src, hello->src);
  EXPECT_EQ(to_server->dst, hello->dst);
  EXPECT_EQ(to_server->dst_port, 443);
  EXPECT_EQ(to_server->tcp->seq, hello->tcp->seq);  // the dropped segment's first byte
  EXPECT_EQ(to_client->src, hello->dst);
  EXPECT_EQ(to_client->dst, hello->src);
  EXPECT_EQ(to_client->dst_port, hello->src_port);
  EXPECT_EQ(to_client->tcp->seq, hello->tcp->ack);
  EXPECT_EQ(to_client->tcp->ack, hello->tcp->seq + hello->payload.size());
  EXPECT_TRUE(to_server->tcp->rst() && to_client->tcp->rst());
  EXPECT_TRUE(common::transport_checksum_valid(*to_server));
  EXPECT_TRUE(common::transport_checksum_valid(*to_client));
  for (std::size_t i = 5; i < frames.size(); ++i) {
    EXPECT_EQ(core.decide(frames[i].ip, frames[i].time).action, Action::drop) << "frame " << i + 1;
  }
  EXPECT_EQ(core.counters().tcp_sni_blocks, 1u);
}

TEST(CensorCore, TcpWithoutDropOnlyInjects) {
  CensorConfig config;
  config.tcp_drop = false;
  auto core = make_core(config);
  EXPECT_EQ(core.decide(tcp_syn(41000), at_s(0)).action, Action::pass);
  Verdict v = core.decide(tcp_hello("blocked.test", 41000), at_s(0.01));
  ASSERT_EQ(v.action, Action::pass_and_inject);
  auto to_server = common::parse_ip_packet(v.inject[0]);
  auto hello = common::parse_ip_packet(tcp_hello("blocked.test", 41000));
  EXPECT_EQ(to_server->tcp->seq, 1000u + hello->payload.size());  // after the passed segment
  EXPECT_EQ(core.residual_count(), 0u);
}

TEST(CensorCore, OpenNamesPass) {
  auto core = make_core();
  EXPECT_EQ(core.decide(quic_initial("open.test", 40000), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.decide(quic_short(40000), at_s(0.1)).action, Action::pass);
  EXPECT_EQ(core.decide(tcp_syn(41000), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.decide(tcp_hello("www.open.test", 41000), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.decide(dns_query("open.test", common::dns_type::kA), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.counters().client_hellos, 2u);
  EXPECT_EQ(core.counters().dropped, 0u);
}

TEST(CensorCore, QuicSniBlocksIpv6Too) {
  auto core = make_core();
  EXPECT_EQ(core.decide(quic_initial("blocked.test", 40000, true), at_s(0)).action, Action::drop);
}

// --- DNS ---

TEST(CensorCore, DnsQueryForABlockedNameGetsAForgedAnswer) {
  auto core = make_core();
  for (std::uint16_t type : {common::dns_type::kA, common::dns_type::kAaaa}) {
    Verdict v = core.decide(dns_query("www.blocked.test", type, 0x7777), at_s(0));
    ASSERT_EQ(v.action, Action::pass_and_inject);  // the real query races the forgery
    ASSERT_EQ(v.inject.size(), 1u);
    auto answer = common::parse_ip_packet(v.inject[0]);
    ASSERT_TRUE(answer.ok());
    EXPECT_EQ(answer->src.to_string(), kDns4);
    EXPECT_EQ(answer->dst.to_string(), kClient4);
    EXPECT_EQ(answer->src_port, 53);
    EXPECT_EQ(answer->dst_port, 40053);
    EXPECT_TRUE(common::transport_checksum_valid(*answer));
    auto msg = common::parse_dns_message(answer->payload);
    ASSERT_TRUE(msg.ok());
    EXPECT_EQ(msg->header.id, 0x7777);
    EXPECT_EQ(msg->header.ancount, 1);
  }
  EXPECT_EQ(core.counters().dns_forged, 2u);
  // Other types are not forged; answers (from the server) are never touched.
  EXPECT_EQ(core.decide(dns_query("blocked.test", common::dns_type::kHttps), at_s(1)).action, Action::pass);
  CensorConfig off;
  off.dns_forge = false;
  auto quiet = make_core(off);
  EXPECT_EQ(quiet.decide(dns_query("blocked.test", common::dns_type::kA), at_s(0)).action, Action::pass);
}

TEST(CensorCore, DnsCaptureForgesOnlyBlockedUdpQueries) {
  auto core = make_core();
  std::size_t forged = 0;
  for (const auto& f : read_capture("dns_queries.pcap")) {
    Verdict v = core.decide(f.ip, f.time);
    EXPECT_NE(v.action, Action::drop);
    forged += v.inject.size();
  }
  // UDP queries for blocked.test: frames 1, 3 (v4) and 27 (v6); TCP queries are not forged.
  EXPECT_EQ(forged, 3u);
}

}  // namespace
}  // namespace quicstep::censor
