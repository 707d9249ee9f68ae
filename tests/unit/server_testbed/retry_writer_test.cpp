// The gate's RetryWriter (a kept AEAD context) writes the same v1 Retry octets as
// ngtcp2_crypto_write_retry (a context per call), for client CIDs of every length; the project's
// own RFC 9001 Retry-tag check accepts them. Other versions go through ngtcp2's function.
// And the RandomPool hands out fresh octets across refills.
#include "server_testbed/gate/retry_writer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <vector>

#include "common/initial_protection.hpp"
#include "common/quic_header.hpp"
#include "server_testbed/token/random_pool.hpp"

namespace {

ngtcp2_cid cid(std::size_t len, std::uint8_t seed) {
  ngtcp2_cid c{};
  c.datalen = len;
  for (std::size_t i = 0; i < len; ++i) c.data[i] = static_cast<std::uint8_t>(seed + i * 7);
  return c;
}

TEST(RetryWriter, SameOctetsAsNgtcp2CryptoWriteRetryForEveryCidLength) {
  quicstep::server_testbed::gate::RetryWriter writer;
  std::vector<std::uint8_t> token(77);
  for (std::size_t i = 0; i < token.size(); ++i) token[i] = static_cast<std::uint8_t>(i * 3);
  for (std::size_t len = 0; len <= NGTCP2_MAX_CIDLEN; ++len) {
    const ngtcp2_cid dcid = cid(len, 1);
    const ngtcp2_cid scid = cid(8, 100);
    const ngtcp2_cid odcid = cid(len < 8 ? 8 : len, 200);  // a client DCID is >= 8 octets
    std::array<std::uint8_t, 1500> ours{};
    std::array<std::uint8_t, 1500> ref{};
    const auto n = writer.write(ours.data(), ours.size(), NGTCP2_PROTO_VER_V1, &dcid, &scid,
                                &odcid, token.data(), token.size());
    const auto m = ngtcp2_crypto_write_retry(ref.data(), ref.size(), NGTCP2_PROTO_VER_V1, &dcid,
                                             &scid, &odcid, token.data(), token.size());
    ASSERT_GT(n, 0) << len;
    ASSERT_EQ(n, m) << len;
    EXPECT_EQ(0, std::memcmp(ours.data(), ref.data(), static_cast<std::size_t>(n))) << len;
    auto hdr = quicstep::common::parse_quic_header({ours.data(), static_cast<std::size_t>(n)}, 0);
    ASSERT_TRUE(hdr) << len;
    EXPECT_TRUE(quicstep::common::verify_retry_integrity(*hdr, {odcid.data, odcid.datalen}))
        << len;
  }
}

TEST(RetryWriter, OtherVersionsFallBackToNgtcp2) {
  quicstep::server_testbed::gate::RetryWriter writer;
  const ngtcp2_cid dcid = cid(8, 1), scid = cid(8, 50), odcid = cid(8, 90);
  const std::uint8_t token[4] = {1, 2, 3, 4};
  std::array<std::uint8_t, 512> ours{}, ref{};
  const auto n = writer.write(ours.data(), ours.size(), NGTCP2_PROTO_VER_V2_DRAFT, &dcid, &scid,
                              &odcid, token, sizeof(token));
  const auto m = ngtcp2_crypto_write_retry(ref.data(), ref.size(), NGTCP2_PROTO_VER_V2_DRAFT,
                                           &dcid, &scid, &odcid, token, sizeof(token));
  ASSERT_EQ(n, m);
  if (n > 0) {
    EXPECT_EQ(0, std::memcmp(ours.data(), ref.data(), static_cast<std::size_t>(n)));
  }
}

TEST(RandomPool, FreshOctetsAcrossRefills) {
  quicstep::server_testbed::token::RandomPool pool;
  std::set<std::array<std::uint8_t, 16>> seen;
  for (int i = 0; i < 1000; ++i) {  // 16,000 octets: several 4 KiB refills, one straddled
    std::array<std::uint8_t, 16> r{};
    pool.fill(r.data(), i == 300 ? 7 : r.size());
    EXPECT_TRUE(seen.insert(r).second) << i;
  }
}

}  // namespace
