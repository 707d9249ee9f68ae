// The universal token: round trips for both types, every CID length 0..20, IPv4 and IPv6,
// expiry, key rotation and grace, wrong key id, wrong address, wrong Retry SCID, every
// single-bit flip, truncation, nonce uniqueness; the master key file; the replay guard.
#include "server_testbed/token/universal_token.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "server_testbed/token/master_key.hpp"
#include "server_testbed/token/replay_guard.hpp"

namespace qt = quicstep::server_testbed::token;

namespace {

constexpr std::uint64_t kNow = 1'780'000'000'000;  // ms since the epoch (2026)

std::vector<std::uint8_t> master(std::uint8_t fill = 7) { return std::vector<std::uint8_t>(32, fill); }

qt::TokenCodec codec(const qt::TokenConfig& cfg = {}, std::uint8_t fill = 7) {
  auto c = qt::TokenCodec::create(master(fill), cfg);
  EXPECT_TRUE(c.ok());
  return std::move(c).value();
}

qt::ClientAddress v4(const char* text) {
  sockaddr_storage ss{};
  auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, text, &sin->sin_addr);
  return qt::client_address(ss).value();
}

qt::ClientAddress v6(const char* text) {
  sockaddr_storage ss{};
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
  sin6->sin6_family = AF_INET6;
  inet_pton(AF_INET6, text, &sin6->sin6_addr);
  return qt::client_address(ss).value();
}

std::vector<std::uint8_t> cid(std::size_t len, std::uint8_t seed) {
  std::vector<std::uint8_t> c(len);
  for (std::size_t i = 0; i < len; ++i) c[i] = static_cast<std::uint8_t>(seed + i * 13);
  return c;
}

struct Token {
  std::array<std::uint8_t, qt::kMaxTokenLen> buf{};
  std::size_t len = 0;
  std::span<const std::uint8_t> view() const { return {buf.data(), len}; }
};

Token retry(qt::TokenCodec& c, const qt::ClientAddress& a, const std::vector<std::uint8_t>& odcid,
            const std::vector<std::uint8_t>& rscid, std::uint64_t now = kNow) {
  Token t;
  t.len = c.issue_retry(t.buf, a, odcid, rscid, now);
  return t;
}

}  // namespace

TEST(UniversalToken, RetryRoundTripEveryCidLengthV4AndV6) {
  auto c = codec();
  for (const auto& addr : {v4("198.18.220.2"), v6("2001:db8:220::2")}) {
    for (std::size_t olen = 0; olen <= 20; ++olen) {
      for (std::size_t rlen = 0; rlen <= 20; ++rlen) {
        const auto odcid = cid(olen, 1), rscid = cid(rlen, 99);
        const Token t = retry(c, addr, odcid, rscid);
        ASSERT_EQ(t.len, qt::kHeaderLen + 8 + 1 + olen + qt::kTagLen);
        qt::VerifiedToken v;
        ASSERT_EQ(c.verify(t.view(), addr, rscid, kNow + 5, &v), qt::Verdict::valid)
            << olen << " " << rlen;
        EXPECT_EQ(v.type, qt::TokenType::retry);
        EXPECT_EQ(v.issued_ms, kNow);
        ASSERT_EQ(v.odcid_len, olen);
        EXPECT_TRUE(std::equal(odcid.begin(), odcid.end(), v.odcid.begin()));
      }
    }
  }
}

TEST(UniversalToken, RejectsCidsLongerThan20) {
  auto c = codec();
  EXPECT_EQ(retry(c, v4("198.18.220.2"), cid(21, 1), cid(8, 2)).len, 0u);
  EXPECT_EQ(retry(c, v4("198.18.220.2"), cid(8, 1), cid(21, 2)).len, 0u);
  const Token t = retry(c, v4("198.18.220.2"), cid(8, 1), cid(8, 2));
  EXPECT_EQ(c.verify(t.view(), v4("198.18.220.2"), cid(21, 2), kNow, nullptr),
            qt::Verdict::malformed);
}

TEST(UniversalToken, AnotherCodecWithTheSameMasterVerifies) {
  auto gate = codec(), worker = codec();
  const auto a = v6("2001:db8:220::2");
  const Token t = retry(gate, a, cid(8, 1), cid(16, 2));
  EXPECT_EQ(worker.verify(t.view(), a, cid(16, 2), kNow, nullptr), qt::Verdict::valid);
  auto other = codec({}, 8);  // another master key
  EXPECT_EQ(other.verify(t.view(), a, cid(16, 2), kNow, nullptr), qt::Verdict::invalid);
}

TEST(UniversalToken, WrongAddressOrRscidIsInvalidPortIsNotBound) {
  auto c = codec();
  const Token t = retry(c, v4("198.18.220.2"), cid(8, 1), cid(16, 2));
  EXPECT_EQ(c.verify(t.view(), v4("198.18.220.3"), cid(16, 2), kNow, nullptr),
            qt::Verdict::invalid);
  EXPECT_EQ(c.verify(t.view(), v6("::ffff:198.18.220.2"), cid(16, 2), kNow, nullptr),
            qt::Verdict::invalid);
  EXPECT_EQ(c.verify(t.view(), v4("198.18.220.2"), cid(16, 3), kNow, nullptr),
            qt::Verdict::invalid);
  EXPECT_EQ(c.verify(t.view(), v4("198.18.220.2"), cid(15, 2), kNow, nullptr),
            qt::Verdict::invalid);
  // The address is the binding; ports never enter (sockaddr with any port gives the same).
  sockaddr_storage ss{};
  auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(40000);
  inet_pton(AF_INET, "198.18.220.2", &sin->sin_addr);
  EXPECT_EQ(c.verify(t.view(), qt::client_address(ss).value(), cid(16, 2), kNow, nullptr),
            qt::Verdict::valid);
}

TEST(UniversalToken, Expiry) {
  qt::TokenConfig cfg;
  cfg.retry_lifetime_ms = 10'000;
  cfg.new_token_lifetime_ms = 3'600'000;
  auto c = codec(cfg);
  const auto a = v4("198.18.220.2");
  const Token r = retry(c, a, cid(8, 1), cid(16, 2));
  EXPECT_EQ(c.verify(r.view(), a, cid(16, 2), kNow + 10'000, nullptr), qt::Verdict::valid);
  qt::VerifiedToken v;
  EXPECT_EQ(c.verify(r.view(), a, cid(16, 2), kNow + 10'001, &v), qt::Verdict::expired);
  EXPECT_EQ(v.issued_ms, kNow);
  Token n;
  n.len = c.issue_new_token(n.buf, a, kNow);
  ASSERT_EQ(n.len, qt::kHeaderLen + 8 + qt::kTagLen);
  // NEW_TOKEN: not bound to CIDs, longer life.
  EXPECT_EQ(c.verify(n.view(), a, cid(8, 5), kNow + 3'600'000, &v), qt::Verdict::valid);
  EXPECT_EQ(v.type, qt::TokenType::new_token);
  EXPECT_EQ(c.verify(n.view(), a, {}, kNow + 3'600'001, nullptr), qt::Verdict::expired);
  EXPECT_EQ(c.verify(n.view(), v4("198.18.220.9"), {}, kNow, nullptr), qt::Verdict::invalid);
  // From the future beyond the allowed skew: not accepted.
  EXPECT_EQ(c.verify(r.view(), a, cid(16, 2), kNow - 2'001, nullptr), qt::Verdict::invalid);
  EXPECT_EQ(c.verify(r.view(), a, cid(16, 2), kNow - 2'000, nullptr), qt::Verdict::valid);
}

TEST(UniversalToken, TypeOctetCannotBeSwapped) {
  auto c = codec();
  const auto a = v4("198.18.220.2");
  Token n;
  n.len = c.issue_new_token(n.buf, a, kNow);
  n.buf[0] = static_cast<std::uint8_t>(qt::TokenType::retry);
  EXPECT_NE(c.verify(n.view(), a, {}, kNow, nullptr), qt::Verdict::valid);
}

TEST(UniversalToken, KeyRotationGraceAndWrongKeyId) {
  qt::TokenConfig cfg;
  cfg.key_period_ms = 60'000;
  cfg.grace_periods = 1;
  cfg.retry_lifetime_ms = 1'000'000;  // isolate the key check from expiry
  auto c = codec(cfg);
  const auto a = v4("198.18.220.2");
  const std::uint64_t start = (kNow / 60'000) * 60'000;
  const Token t = retry(c, a, cid(8, 1), cid(16, 2), start + 59'000);
  EXPECT_EQ(c.verify(t.view(), a, cid(16, 2), start + 61'000, nullptr), qt::Verdict::valid);
  EXPECT_EQ(c.verify(t.view(), a, cid(16, 2), start + 121'000, nullptr),
            qt::Verdict::unknown_key);
  // Tokens of the next sequence have another key id and another key.
  const Token next = retry(c, a, cid(8, 1), cid(16, 2), start + 61'000);
  EXPECT_NE(next.buf[1], t.buf[1]);
  Token relabeled = next;
  relabeled.buf[1] = t.buf[1];  // claims the older key: tag fails under it
  EXPECT_EQ(c.verify(relabeled.view(), a, cid(16, 2), start + 61'000, nullptr),
            qt::Verdict::invalid);
  Token unknown = t;
  unknown.buf[1] = static_cast<std::uint8_t>(t.buf[1] + 100);
  EXPECT_EQ(c.verify(unknown.view(), a, cid(16, 2), start + 59'000, nullptr),
            qt::Verdict::unknown_key);
}

TEST(UniversalToken, EveryBitFlipAndTruncationIsRejected) {
  auto c = codec();
  const auto a = v6("2001:db8:220::7");
  const auto rscid = cid(20, 2);
  const Token t = retry(c, a, cid(20, 1), rscid);
  for (std::size_t i = 0; i < t.len; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Token x = t;
      x.buf[i] ^= static_cast<std::uint8_t>(1 << bit);
      ASSERT_NE(c.verify(x.view(), a, rscid, kNow, nullptr), qt::Verdict::valid) << i << ":" << bit;
    }
  }
  for (std::size_t len = 0; len < t.len; ++len) {
    Token x = t;
    x.len = len;
    ASSERT_NE(c.verify(x.view(), a, rscid, kNow, nullptr), qt::Verdict::valid) << len;
  }
}

TEST(UniversalToken, NoncesAreUniqueAndNotFromClientInput) {
  auto c1 = codec(), c2 = codec();
  const auto a = v4("198.18.220.2");
  std::set<std::string> nonces;
  for (int i = 0; i < 5000; ++i) {
    // Same client, same CIDs, same millisecond: the nonce must still differ.
    for (auto* c : {&c1, &c2}) {
      const Token t = retry(*c, a, cid(8, 1), cid(16, 2));
      ASSERT_TRUE(nonces.emplace(reinterpret_cast<const char*>(t.buf.data() + 2), qt::kNonceLen)
                      .second);
    }
  }
}

TEST(MasterKey, MissingShortAndGoodFiles) {
  auto missing = qt::load_master_key("/nonexistent/qs-key");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/qs-key"), std::string::npos);
  char path[] = "/tmp/qs-token-key-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "0123456789abcdef", 16), 16);
  auto short_key = qt::load_master_key(path);
  EXPECT_FALSE(short_key.ok());
  EXPECT_NE(short_key.error().message.find("16 octets"), std::string::npos)
      << short_key.error().message;
  ASSERT_EQ(write(fd, "0123456789abcdef", 16), 16);
  close(fd);
  auto good = qt::load_master_key(path);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->size(), 32u);
  std::remove(path);
  EXPECT_FALSE(qt::TokenCodec::create(std::vector<std::uint8_t>(31, 1), {}).ok());
}

TEST(ReplayGuard, RepeatWindowReplayRetentionAndBound) {
  qt::ReplayGuard g(3, 1'000, 10'000);
  std::array<std::uint8_t, qt::kNonceLen> n1{}, n2{}, n3{}, n4{};
  n1[0] = 1;
  n2[0] = 2;
  n3[0] = 3;
  n4[0] = 4;
  using S = qt::ReplayGuard::Seen;
  EXPECT_EQ(g.check(n1, 0), S::first);
  EXPECT_EQ(g.check(n1, 1'000), S::repeat);
  EXPECT_EQ(g.check(n1, 1'001), S::replayed);
  EXPECT_EQ(g.check(n2, 2'000), S::first);
  EXPECT_EQ(g.check(n3, 2'000), S::first);
  EXPECT_EQ(g.check(n4, 2'000), S::first);  // full: n1 evicted early
  EXPECT_EQ(g.evicted_early(), 1u);
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.check(n1, 3'000), S::first);
  EXPECT_EQ(g.check(n2, 12'001), S::first);  // retention over: forgotten, size shrinks
  EXPECT_LE(g.size(), 3u);
}
