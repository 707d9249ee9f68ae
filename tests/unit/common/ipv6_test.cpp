#include "common/ipv6.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/packet_builder.hpp"

namespace quicstep::common {
namespace {

using test::PacketBuilder;
namespace nh = ipv6_next_header;

PacketBuilder v6() {
  PacketBuilder b;
  b.ipv6("2001:db8::1", "2001:db8:1::2");
  return b;
}

TEST(Ipv6, ParsesFixedHeader) {
  const auto pkt =
      v6().tos(0x2e).flow_label(0xabcde).ttl(33).udp(40000, 443).payload("quic").build();
  auto v = parse_ipv6(pkt);
  ASSERT_TRUE(v.ok()) << to_string(v.error());
  EXPECT_EQ(v->src, test::ipv6_addr("2001:db8::1"));
  EXPECT_EQ(v->dst, test::ipv6_addr("2001:db8:1::2"));
  EXPECT_EQ(v->traffic_class, 0x2e);
  EXPECT_EQ(v->flow_label, 0xabcdeu);
  EXPECT_EQ(v->hop_limit, 33);
  EXPECT_EQ(v->payload_length, 12);
  EXPECT_EQ(v->next_header, 17);
  EXPECT_EQ(v->protocol, 17);
  EXPECT_EQ(v->extension_count, 0);
  EXPECT_TRUE(v->extensions.empty());
  EXPECT_FALSE(v->is_fragment());
  EXPECT_TRUE(v->has_l4_header());
  EXPECT_EQ(v->payload.size(), 12u);
  EXPECT_EQ(v->payload.data(), pkt.data() + 40);
}

TEST(Ipv6, WalksTheExtensionChain) {
  const auto pkt = v6().hop_by_hop({0x05, 0x02, 0x00, 0x00})  // Router Alert
                       .routing(4, 0, std::vector<std::uint8_t>(20, 0))
                       .authentication(0x1000, 7)
                       .destination_options()
                       .tcp(40000, 443)
                       .payload("x")
                       .build();
  auto v = parse_ipv6(pkt);
  ASSERT_TRUE(v.ok()) << to_string(v.error());
  EXPECT_EQ(v->next_header, nh::kHopByHop);
  EXPECT_EQ(v->protocol, 6);
  EXPECT_EQ(v->extension_count, 4);
  // 8 (hop-by-hop) + 24 (routing) + 24 (AH with a 12-byte ICV) + 8 (destination options).
  EXPECT_EQ(v->extensions.size(), 64u);
  EXPECT_EQ(v->payload.size(), 21u);
  EXPECT_EQ(v->payload.data(), pkt.data() + 40 + 64);
  EXPECT_FALSE(v->fragment.has_value());
}

TEST(Ipv6, AuthenticationHeaderUsesFourByteUnits) {
  // AH with a 16-byte ICV: 12 + 16 = 28, padded to 32 bytes; length field 32/4 - 2 = 6.
  const auto pkt = v6().authentication(1, 2, std::vector<std::uint8_t>(16, 0xaa)).udp(1, 2).build();
  auto v = parse_ipv6(pkt);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(pkt[41], 6);
  EXPECT_EQ(v->extensions.size(), 32u);
  EXPECT_EQ(v->protocol, 17);
  EXPECT_EQ(v->payload.size(), 8u);
}

TEST(Ipv6, FirstFragmentKeepsWalking) {
  const auto pkt =
      v6().fragment(0, true, 0xdeadbeef).destination_options().udp(5353, 53).payload("dns").build();
  auto v = parse_ipv6(pkt);
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->fragment.has_value());
  EXPECT_EQ(v->fragment->offset, 0);
  EXPECT_TRUE(v->fragment->more_fragments);
  EXPECT_EQ(v->fragment->identification, 0xdeadbeefu);
  EXPECT_TRUE(v->is_fragment());
  EXPECT_TRUE(v->has_l4_header());
  EXPECT_EQ(v->protocol, 17);
  EXPECT_EQ(v->extension_count, 2);
  EXPECT_EQ(v->payload.size(), 11u);
}

TEST(Ipv6, NonFirstFragmentHasNoL4Header) {
  // The bytes after the fragment header look like a destination-options header, but in a
  // non-first fragment they are the middle of the datagram: the walk must stop.
  const auto pkt = v6().fragment(181, false, 9)
                       .protocol(nh::kDestinationOptions)
                       .payload(test::from_hex("1100 6d69 6464 6c65"))
                       .build();
  auto v = parse_ipv6(pkt);
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->fragment.has_value());
  EXPECT_EQ(v->fragment->offset, 181);
  EXPECT_EQ(v->fragment->offset_bytes(), 1448u);
  EXPECT_FALSE(v->fragment->more_fragments);
  EXPECT_FALSE(v->has_l4_header());
  EXPECT_EQ(v->protocol, nh::kDestinationOptions);
  EXPECT_EQ(v->extension_count, 1);
  EXPECT_EQ(v->payload.size(), 8u);
}

TEST(Ipv6, StopsAtEspAndNoNextHeader) {
  auto v = parse_ipv6(v6().protocol(nh::kEsp).payload("encrypted").build());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->protocol, nh::kEsp);
  EXPECT_EQ(v->payload.size(), 9u);
  v = parse_ipv6(v6().destination_options().build());  // default protocol: no next header
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->protocol, nh::kNoNextHeader);
  EXPECT_TRUE(v->payload.empty());
}

TEST(Ipv6, IgnoresTrailingBytes) {
  auto v = parse_ipv6(v6().udp(1, 2).trailer({1, 2, 3}).build());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->payload.size(), 8u);
}

TEST(Ipv6, EveryTruncationIsATypedError) {
  const auto pkt =
      v6().hop_by_hop().fragment(0, true, 1).destination_options().udp(1, 2).payload("abc").build();
  for (std::size_t n = 0; n < pkt.size(); ++n) {
    auto v = parse_ipv6(Bytes(pkt).first(n));
    ASSERT_FALSE(v.ok()) << "prefix " << n;
    EXPECT_EQ(v.error(), n < 40 ? Error::truncated : Error::bad_length) << "prefix " << n;
  }
  EXPECT_TRUE(parse_ipv6(pkt).ok());
}

TEST(Ipv6, ChainLimitAndLoops) {
  // Eight headers are accepted; a ninth exceeds the bound. A "loop" of destination-options
  // headers naming each other is a long chain, and ends the same way.
  PacketBuilder eight = v6();
  for (int i = 0; i < 8; ++i) eight.destination_options();
  auto v = parse_ipv6(eight.udp(1, 2).build());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->extension_count, 8);

  PacketBuilder many = v6();
  for (int i = 0; i < 200; ++i) many.destination_options();
  v = parse_ipv6(many.udp(1, 2).build());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), Error::limit_exceeded);
}

TEST(Ipv6, RejectsBadChains) {
  struct Case {
    const char* what;
    std::vector<std::uint8_t> packet;
    Error error;
  };
  const Case cases[] = {
      {"version 4", v6().version(4).udp(1, 2).build(), Error::bad_value},
      {"version 4, short input", std::vector<std::uint8_t>{0x45, 0}, Error::bad_value},
      {"hop-by-hop not first", v6().destination_options().hop_by_hop().udp(1, 2).build(),
       Error::bad_value},
      {"two fragment headers", v6().fragment(0, true, 1).fragment(0, true, 2).udp(1, 2).build(),
       Error::bad_value},
      {"header length past payload",
       v6().raw_extension(nh::kDestinationOptions, {0x10, 0, 0, 0, 0, 0, 0}).udp(1, 2).build(),
       Error::bad_length},
      {"AH length past payload",
       v6().raw_extension(nh::kAuthentication, {0xff, 0, 0, 0, 0, 0, 0}).build(),
       Error::bad_length},
      {"extension header under 8 bytes", v6().raw_extension(nh::kRouting, {0, 0, 0}).build(),
       Error::bad_length},
      {"payload length > data", v6().udp(1, 2).ipv6_payload_length(9).build(), Error::bad_length},
      {"payload length cuts the chain", v6().hop_by_hop().udp(1, 2).ipv6_payload_length(4).build(),
       Error::bad_length},
      {"empty", {}, Error::truncated},
  };
  for (const Case& c : cases) {
    auto v = parse_ipv6(c.packet);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.error(), c.error) << c.what << ": " << to_string(v.error());
  }
}

TEST(Ipv6, PayloadLengthShorterThanDataBoundsThePayload) {
  auto v = parse_ipv6(v6().udp(1, 2).payload("abcdef").ipv6_payload_length(10).build());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->payload.size(), 10u);
}

}  // namespace
}  // namespace quicstep::common
