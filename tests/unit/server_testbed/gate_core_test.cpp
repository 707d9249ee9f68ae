// The gate's decision without I/O: Retry for a token-less Initial (a Retry ngtcp2 parses,
// whose SCID names a worker and whose token a worker's codec accepts), forwarding of the
// retried Initial to that worker with the client address and original DCID, drops for a
// token from another address, a replayed token and garbage, NEW_TOKEN Initials to the
// steering hash's worker; and the forward message's round trip and truncations.
#include "server_testbed/gate/gate_core.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <random>
#include <vector>

#include "common/initial_protection.hpp"
#include "server_testbed/gate_forward.hpp"

namespace qs = quicstep::server_testbed;
namespace qt = quicstep::server_testbed::token;

namespace {

constexpr std::uint64_t kNow = 1'780'000'000'000;

sockaddr_storage addr4(const char* ip, std::uint16_t port) {
  sockaddr_storage ss{};
  auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port);
  inet_pton(AF_INET, ip, &sin->sin_addr);
  return ss;
}

sockaddr_storage addr6(const char* ip, std::uint16_t port) {
  sockaddr_storage ss{};
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &sin6->sin6_addr);
  return ss;
}

std::vector<std::uint8_t> initial(const std::vector<std::uint8_t>& dcid,
                                  std::span<const std::uint8_t> token) {
  namespace qc = quicstep::common;
  std::vector<std::uint8_t> frames = {0x06, 0x00, 0x40, 0x40};
  frames.resize(1200, 0x00);  // the datagram must reach 1200 octets
  const std::array<std::uint8_t, 8> scid = {1, 2, 3, 4, 5, 6, 7, 8};
  auto keys = qc::derive_initial_keys(1, dcid, qc::Perspective::client);
  qc::InitialPacketSpec spec;
  spec.dcid = dcid;
  spec.scid = scid;
  spec.token = token;
  spec.payload = frames;
  return qc::protect_initial(spec, *keys).value();
}

qt::TokenCodec codec() {
  return qt::TokenCodec::create(std::vector<std::uint8_t>(32, 9), {}).value();
}

struct Fixture : ::testing::Test {
  qs::CidCodec cids = qs::CidCodec::create({0, 16, 4, std::nullopt}).value();
  qs::TokenCounters tokens;
  qs::gate::GateCounters counters;
  qs::gate::GateCore core{cids, qs::AddressValidator(codec(), true, tokens), counters};
};

}  // namespace

TEST_F(Fixture, RetryThenForwardToTheNamedWorker) {
  const std::vector<std::uint8_t> odcid = {0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4, 5};
  const auto client = addr4("198.18.220.2", 40000);
  const auto r = core.on_datagram(initial(odcid, {}), client, kNow);
  ASSERT_EQ(r.kind, qs::gate::GateCore::Kind::retry)
      << counters.to_json(tokens).dump();
  ngtcp2_pkt_hd hd{};
  ASSERT_GT(ngtcp2_pkt_decode_hd_long(&hd, r.out.data(), r.out.size()), 0);
  EXPECT_EQ(r.out[0] & 0xf0, 0xf0);  // long header, fixed bit, type 3 (Retry)
  auto worker = cids.decode({hd.scid.data, hd.scid.datalen});
  ASSERT_TRUE(worker.ok());
  // The token sits between the SCID and the 16-octet integrity tag.
  const std::size_t token_off = 1 + 4 + 1 + hd.dcid.datalen + 1 + hd.scid.datalen;
  const std::vector<std::uint8_t> token(r.out.begin() + static_cast<long>(token_off),
                                        r.out.end() - 16);
  EXPECT_EQ(tokens.retry_sent.load(), 1u);
  // A worker's codec (same master key) accepts it.
  auto worker_codec = codec();
  qt::VerifiedToken v;
  ASSERT_EQ(worker_codec.verify(token, qt::client_address(client).value(),
                                {hd.scid.data, hd.scid.datalen}, kNow + 10, &v),
            qt::Verdict::valid);
  // The retried Initial (DCID = Retry SCID) is forwarded to that worker, from a new port.
  const std::vector<std::uint8_t> rscid(hd.scid.data, hd.scid.data + hd.scid.datalen);
  const auto pkt = initial(rscid, token);
  const auto f = core.on_datagram(pkt, addr4("198.18.220.2", 40001), kNow + 20);
  ASSERT_EQ(f.kind, qs::gate::GateCore::Kind::forward);
  EXPECT_EQ(f.worker, *worker);
  auto msg = qs::decode_forward(f.out);
  ASSERT_TRUE(msg.ok());
  EXPECT_TRUE(msg->has_odcid);
  ASSERT_EQ(msg->odcid_len, odcid.size());
  EXPECT_EQ(0, std::memcmp(msg->odcid.data(), odcid.data(), odcid.size()));
  EXPECT_EQ(msg->packet.size(), pkt.size());
  EXPECT_EQ(reinterpret_cast<const sockaddr_in*>(&msg->client)->sin_port, htons(40001));
  // From another address: dropped. The same token 2 s later: replayed, dropped.
  EXPECT_EQ(core.on_datagram(pkt, addr4("198.18.220.3", 40001), kNow + 30).kind,
            qs::gate::GateCore::Kind::drop);
  EXPECT_EQ(tokens.token_invalid.load(), 1u);
  EXPECT_EQ(core.on_datagram(pkt, addr4("198.18.220.2", 40002), kNow + 2020).kind,
            qs::gate::GateCore::Kind::drop);
  EXPECT_EQ(tokens.token_replayed.load(), 1u);
  EXPECT_EQ(counters.drop_token.load(), 2u);
}

TEST_F(Fixture, NewTokenGoesToTheSteeringHashWorkerV6) {
  auto c = codec();
  const auto client = addr6("2001:db8:220::2", 5000);
  std::array<std::uint8_t, qt::kMaxTokenLen> tok{};
  const std::size_t n = c.issue_new_token(tok, qt::client_address(client).value(), kNow);
  const std::vector<std::uint8_t> dcid = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  const auto pkt = initial(dcid, {tok.data(), n});
  const auto f = core.on_datagram(pkt, client, kNow + 1);
  ASSERT_EQ(f.kind, qs::gate::GateCore::Kind::forward);
  std::array<std::uint8_t, QS_STEER_BUF_LEN> peek{};
  std::copy(pkt.begin(), pkt.begin() + QS_STEER_PEEK_LEN, peek.begin());
  EXPECT_EQ(f.worker, qs_steer_dcid_worker(peek.data(), static_cast<qs_u32>(pkt.size()), 4));
  auto msg = qs::decode_forward(f.out);
  ASSERT_TRUE(msg.ok());
  EXPECT_FALSE(msg->has_odcid);
  EXPECT_EQ(msg->client.ss_family, AF_INET6);
  EXPECT_EQ(tokens.new_token_valid.load(), 1u);
}

TEST_F(Fixture, GarbageAndShortPacketsAreDropped) {
  std::vector<std::uint8_t> junk(1200, 0x42);
  EXPECT_EQ(core.on_datagram(junk, addr4("198.18.220.2", 1), kNow).kind,
            qs::gate::GateCore::Kind::drop);
  auto pkt = initial({1, 2, 3, 4, 5, 6, 7, 8}, {});
  pkt.resize(600);  // ngtcp2_accept wants a full-size Initial datagram
  EXPECT_EQ(core.on_datagram(pkt, addr4("198.18.220.2", 1), kNow).kind,
            qs::gate::GateCore::Kind::drop);
  EXPECT_EQ(core.on_datagram({}, addr4("198.18.220.2", 1), kNow).kind,
            qs::gate::GateCore::Kind::drop);
  EXPECT_EQ(counters.drop_not_initial.load(), 3u);
}

TEST(GateForward, RoundTripAndEveryTruncation) {
  const std::vector<std::uint8_t> packet(1200, 7);
  const std::uint8_t odcid[20] = {1, 2, 3};
  std::vector<std::uint8_t> buf(2000);
  for (const auto& client : {addr4("198.18.220.2", 443), addr6("2001:db8:220::2", 443)}) {
    for (std::size_t olen = 0; olen <= 20; ++olen) {
      const std::size_t n = qs::encode_forward(buf, client, odcid, olen, olen > 0, packet);
      ASSERT_EQ(n, qs::kForwardHeaderLen + packet.size());
      auto msg = qs::decode_forward({buf.data(), n});
      ASSERT_TRUE(msg.ok());
      EXPECT_EQ(msg->odcid_len, olen);
      EXPECT_EQ(msg->has_odcid, olen > 0);
      EXPECT_EQ(0, std::memcmp(&msg->client, &client, sizeof(sockaddr_in)));
      for (std::size_t cut = 0; cut <= qs::kForwardHeaderLen; ++cut) {
        ASSERT_FALSE(qs::decode_forward({buf.data(), cut}).ok()) << cut;
      }
    }
  }
  EXPECT_EQ(qs::encode_forward(buf, addr4("198.18.220.2", 1), odcid, 21, true, packet), 0u);
  std::vector<std::uint8_t> small(100);
  EXPECT_EQ(qs::encode_forward(small, addr4("198.18.220.2", 1), odcid, 0, false, packet), 0u);
  EXPECT_TRUE(qs::valid_gate_name("qs-test_1"));
  EXPECT_FALSE(qs::valid_gate_name("../etc"));
  EXPECT_FALSE(qs::valid_gate_name(""));
}

// The two helpers the steering program's gate mode adds (shared header, same code in BPF).
TEST(SteeringGateHelpers, V1InitialAndDcidHash) {
  auto pkt = initial({1, 2, 3, 4, 5, 6, 7, 8}, {});
  EXPECT_EQ(qs_steer_is_v1_initial(pkt.data(), static_cast<qs_u32>(pkt.size())), 1);
  for (std::uint32_t len = 0; len < 7; ++len) {
    EXPECT_EQ(qs_steer_is_v1_initial(pkt.data(), len), 0) << len;
  }
  auto other = pkt;
  other[0] = static_cast<std::uint8_t>((other[0] & 0xcf) | 0x20);  // Handshake type
  EXPECT_EQ(qs_steer_is_v1_initial(other.data(), static_cast<qs_u32>(other.size())), 0);
  other = pkt;
  other[4] = 2;  // another version
  EXPECT_EQ(qs_steer_is_v1_initial(other.data(), static_cast<qs_u32>(other.size())), 0);
  other = pkt;
  other[0] &= 0x7f;  // short header
  EXPECT_EQ(qs_steer_is_v1_initial(other.data(), static_cast<qs_u32>(other.size())), 0);

  // The hash spreads client DCIDs over the workers and is stable per DCID.
  std::array<int, 4> hits{};
  std::mt19937 rng(7);
  for (int i = 0; i < 4000; ++i) {
    std::array<std::uint8_t, QS_STEER_BUF_LEN> buf{};
    buf[0] = 0xc0;
    buf[5] = 8;
    // Structured DCIDs (a counter) as well as random ones must spread.
    for (int j = 0; j < 8; ++j) {
      buf[6 + j] = static_cast<std::uint8_t>(i % 2 ? rng() : (j == 7 ? i & 0xff : i >> 8));
    }
    const auto w = qs_steer_dcid_worker(buf.data(), 1200, 4);
    ASSERT_LT(w, 4u);
    ASSERT_EQ(w, qs_steer_dcid_worker(buf.data(), 1200, 4));
    ++hits[w];
  }
  for (int h : hits) EXPECT_GT(h, 700);
  std::array<std::uint8_t, QS_STEER_BUF_LEN> bad{};
  bad[0] = 0xc0;
  bad[5] = 21;  // DCID longer than 20: worker 0, no read past the buffer
  EXPECT_EQ(qs_steer_dcid_worker(bad.data(), 1200, 4), 0u);
  EXPECT_EQ(qs_steer_dcid_worker(bad.data(), 5, 4), 0u);
}
