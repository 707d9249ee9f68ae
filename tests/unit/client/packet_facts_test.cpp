// The fast path against the full parser: whenever peek_common_packet accepts bytes, the
// wire library's parse_ip_packet accepts them too and yields the same facts.
#include "client/core/packet_facts.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "client_packets.hpp"

namespace quicstep::client::core {
namespace {

using namespace testing;  // NOLINT: the test packets

std::vector<ByteVec> seeds() {
  return {
      udp4(40000, 443, short_header()),
      udp6(40000, 443, short_header()),
      udp4(40000, 53, ByteVec(30, 1)),
      PacketBuilder().ipv4(kClient4, kServer4).tcp(1, 443).flags(test::tcp::kSyn).build(),
      PacketBuilder().ipv6(kClient6, kServer6).tcp(1, 443).tcp_options(ByteVec(8, 1))
          .payload(ByteVec(10, 2)).build(),
      PacketBuilder().ipv4(kClient4, kServer4).ipv4_options(ByteVec(8, 1)).udp(1, 443)
          .payload(short_header()).build(),
      PacketBuilder().ipv4(kClient4, kServer4).fragment(0, true, 1).udp(1, 443)
          .payload(short_header()).build(),
      PacketBuilder().ipv6(kClient6, kServer6).hop_by_hop().udp(1, 443)
          .payload(short_header()).build(),
      PacketBuilder().ipv4(kClient4, kServer4).udp(1, 443).payload(short_header())
          .trailer(ByteVec(6, 0)).build(),
      PacketBuilder().ipv4(kClient4, kServer4).protocol(1).payload(ByteVec(8, 0)).build(),
  };
}

void check_agrees(const ByteVec& bytes) {
  PacketFacts fast;
  const bool fast_ok = peek_common_packet(bytes, &fast);
  auto parsed = common::parse_ip_packet(bytes);
  if (fast_ok) {
    ASSERT_TRUE(parsed.ok());
    ASSERT_TRUE(fast == facts_of(*parsed));
  }
  PacketFacts any;
  ASSERT_EQ(read_packet_facts(bytes, &any), parsed.ok());
  if (parsed.ok()) {
    ASSERT_TRUE(any == facts_of(*parsed));
  }
}

TEST(PacketFacts, FastPathTakesTheCommonShapes) {
  const auto s = seeds();
  PacketFacts f;
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(peek_common_packet(s[i], &f)) << i;
  EXPECT_FALSE(peek_common_packet(s[6], &f));  // fragment
  EXPECT_FALSE(peek_common_packet(s[7], &f));  // extension header
  EXPECT_TRUE(peek_common_packet(s[8], &f));   // Ethernet padding after the datagram
  EXPECT_FALSE(peek_common_packet(s[9], &f));  // ICMP
  ASSERT_TRUE(peek_common_packet(s[1], &f));
  EXPECT_EQ(f.dst_port(), 443);
  EXPECT_EQ(f.payload.size(), short_header().size());
}

TEST(PacketFacts, AgreesWithTheFullParserOnEveryTruncation) {
  for (const ByteVec& seed : seeds()) {
    for (std::size_t n = 0; n <= seed.size(); ++n) {
      check_agrees(ByteVec(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(n)));
    }
  }
}

TEST(PacketFacts, AgreesWithTheFullParserOnMutations) {
  std::mt19937 rng(3);
  const auto s = seeds();
  for (int i = 0; i < 300'000; ++i) {
    ByteVec p = s[rng() % s.size()];
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      // Mostly in the headers, where the fast path's checks live.
      p[rng() % std::min<std::size_t>(p.size(), 64)] ^= static_cast<std::uint8_t>(rng());
    }
    check_agrees(p);
  }
}

}  // namespace
}  // namespace quicstep::client::core
