// ChannelHealth: WireGuard's state parsed (UAPI get, wg show dump) and judged over time.
#include "client/core/channel_health.hpp"

#include <gtest/gtest.h>

#include <string>

namespace quicstep::client::core {
namespace {

using common::Timestamp;
using namespace std::chrono_literals;

constexpr char kUapi[] =
    "private_key=e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a\n"
    "listen_port=51820\n"
    "public_key=b85996fecc9c7f1fc6d2572a76eda11d59bcd20be8e543b15ce4bd85a8e75a33\n"
    "endpoint=198.18.3.2:51820\n"
    "last_handshake_time_sec=1700000000\n"
    "last_handshake_time_nsec=5\n"
    "tx_bytes=3000\n"
    "rx_bytes=4000\n"
    "persistent_keepalive_interval=0\n"
    "allowed_ip=0.0.0.0/0\n"
    "public_key=58402e695ba1772b1cc9309755f043251ea77fdcf10fbe63989ceb7e19321376\n"
    "rx_bytes=1\n"
    "errno=0\n"
    "\n";

TEST(ChannelHealth, UapiAnswerGivesPeersAndCounters) {
  auto r = parse_uapi_get(kUapi);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->peers.size(), 2u);
  EXPECT_EQ(r->peers[0].last_handshake_s, 1700000000);
  EXPECT_EQ(r->peers[0].tx_bytes, 3000u);
  EXPECT_EQ(r->peers[0].rx_bytes, 4000u);
  EXPECT_EQ(r->peers[1].last_handshake_s, 0);
  EXPECT_EQ(r->peers[1].rx_bytes, 1u);
}

TEST(ChannelHealth, UapiErrorsQuoteTheLine) {
  auto no_errno = parse_uapi_get("public_key=ab\nrx_bytes=1\n");
  ASSERT_FALSE(no_errno.ok());
  EXPECT_NE(no_errno.error().message.find("errno"), std::string::npos);
  auto failed = parse_uapi_get("errno=19\n\n");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("19"), std::string::npos);
  auto bad = parse_uapi_get("public_key=ab\nrx_bytes=12x\nerrno=0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("`rx_bytes=12x'"), std::string::npos);
  EXPECT_FALSE(parse_uapi_get("garbage\nerrno=0\n").ok());
}

TEST(ChannelHealth, EveryTruncationOfTheUapiAnswerIsRefusedOrConsistent) {
  const std::string full = kUapi;
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto r = parse_uapi_get(std::string_view(full).substr(0, n));
    // Only a cut after "errno=0" may parse; anything shorter lacks the end.
    EXPECT_EQ(r.ok(), n >= full.find("errno=0") + 7) << n;
  }
}

TEST(ChannelHealth, WgDumpGivesPeersAndCounters) {
  auto r = parse_wg_dump(
      "priv\tpub\t51820\toff\n"
      "peerkey\t(none)\t198.18.3.2:51820\t0.0.0.0/0,::/0\t1700000000\t4000\t3000\toff\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->peers.size(), 1u);
  EXPECT_EQ(r->peers[0].public_key, "peerkey");
  EXPECT_EQ(r->peers[0].rx_bytes, 4000u);
  EXPECT_EQ(r->peers[0].tx_bytes, 3000u);
  EXPECT_FALSE(parse_wg_dump("").ok());
  EXPECT_FALSE(parse_wg_dump("priv\tpub\t51820\toff\nshort\tline\n").ok());
  EXPECT_FALSE(parse_wg_dump("priv\tpub\t51820\toff\nk\tp\te\ta\tnever\t1\t2\toff\n").ok());
}

WireGuardReading peer(std::int64_t handshake, std::uint64_t rx, std::uint64_t tx) {
  return WireGuardReading{{WireGuardPeerReading{"k", handshake, rx, tx}}};
}

Timestamp at(std::chrono::seconds s) { return Timestamp{} + s; }

TEST(ChannelHealth, SendingWithNothingBackFor20sIsUnansweredUntilABytesReturns) {
  ChannelHealthJudge j;
  const std::int64_t unix0 = 1'700'000'000;
  EXPECT_EQ(j.update(at(0s), unix0, true, peer(unix0 - 5, 100, 100)), ChannelHealth::working);
  EXPECT_EQ(j.handshake_age_s(), 5);
  // The censor starts dropping: tx grows (data, then handshake initiations), rx does not.
  std::uint64_t tx = 100;
  for (int s = 1; s <= 20; ++s) {
    tx += 148;
    const auto h = j.update(at(std::chrono::seconds(s)), unix0 + s, true,
                            peer(unix0 - 5, 100, tx));
    // Sending began at 1 s: unanswered from 21 s on; a fresh handshake meanwhile is working.
    EXPECT_EQ(h, ChannelHealth::working) << s;
  }
  EXPECT_EQ(j.update(at(21s), unix0 + 21, true, peer(unix0 - 5, 100, tx + 148)),
            ChannelHealth::unanswered);
  EXPECT_EQ(j.unanswered_episodes(), 1u);
  // WireGuard gives up sending: still unanswered (nothing came back).
  EXPECT_EQ(j.update(at(200s), unix0 + 200, true, peer(unix0 - 5, 100, tx + 148)),
            ChannelHealth::unanswered);
  // An answer: working again; one episode.
  EXPECT_EQ(j.update(at(201s), unix0 + 201, true, peer(unix0 + 201, 192, tx + 300)),
            ChannelHealth::working);
  EXPECT_EQ(j.unanswered_episodes(), 1u);
}

TEST(ChannelHealth, QuietWithoutARecentHandshakeIsIdleNotDead) {
  ChannelHealthJudge j;
  const std::int64_t unix0 = 1'700'000'000;
  EXPECT_EQ(j.update(at(0s), unix0, true, peer(unix0 - 500, 10, 10)), ChannelHealth::idle);
  EXPECT_EQ(j.update(at(100s), unix0 + 100, true, peer(unix0 - 500, 10, 10)), ChannelHealth::idle);
  EXPECT_EQ(j.update(at(101s), unix0 + 101, true, peer(0, 0, 0)), ChannelHealth::idle);  // reset
  EXPECT_EQ(j.unanswered_episodes(), 0u);
}

TEST(ChannelHealth, DownAndUnreadableAreSaidAndNoSilenceIsTimedAcrossThem) {
  ChannelHealthJudge j;
  const std::int64_t unix0 = 1'700'000'000;
  EXPECT_EQ(j.update(at(0s), unix0, true, std::nullopt), ChannelHealth::unknown);
  EXPECT_EQ(j.update(at(1s), unix0 + 1, true, peer(unix0, 10, 10)), ChannelHealth::working);
  EXPECT_EQ(j.update(at(2s), unix0 + 2, true, peer(unix0, 10, 20)), ChannelHealth::working);
  EXPECT_EQ(j.update(at(3s), unix0 + 3, false, std::nullopt), ChannelHealth::down);
  EXPECT_FALSE(j.handshake_age_s().has_value());
  // Back 30 s later, sending: its silence is timed from now, not from 2 s.
  EXPECT_EQ(j.update(at(33s), unix0 + 33, true, peer(unix0, 10, 30)), ChannelHealth::working);
  EXPECT_EQ(j.update(at(34s), unix0 + 34, true, peer(unix0, 10, 40)), ChannelHealth::working);
  EXPECT_EQ(j.update(at(53s), unix0 + 53, true, peer(unix0, 10, 50)), ChannelHealth::working);
  EXPECT_EQ(j.update(at(54s), unix0 + 54, true, peer(unix0, 10, 60)), ChannelHealth::unanswered);
}

}  // namespace
}  // namespace quicstep::client::core
