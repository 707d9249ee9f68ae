#include "common/ipv4.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/packet_builder.hpp"

namespace quicstep::common {
namespace {

using test::PacketBuilder;

std::vector<std::uint8_t> udp_packet() {
  return PacketBuilder()
      .ipv4("198.18.0.1", "198.18.1.2")
      .ttl(61)
      .ip_id(0x1234)
      .udp(40000, 53)
      .payload("hello")
      .build();
}

TEST(Ipv4, ParsesHeaderFields) {
  const auto pkt = PacketBuilder()
                       .ipv4("198.18.0.1", "198.18.1.2")
                       .ttl(61)
                       .tos(0xb8)
                       .ip_id(0x1234)
                       .dont_fragment()
                       .udp(40000, 53)
                       .payload("hello")
                       .build();
  auto v = parse_ipv4(pkt);
  ASSERT_TRUE(v.ok()) << to_string(v.error());
  EXPECT_EQ(v->src, (std::array<std::uint8_t, 4>{198, 18, 0, 1}));
  EXPECT_EQ(v->dst, (std::array<std::uint8_t, 4>{198, 18, 1, 2}));
  EXPECT_EQ(v->ihl, 5);
  EXPECT_EQ(v->header_length(), 20u);
  EXPECT_EQ(v->tos, 0xb8);
  EXPECT_EQ(v->total_length, 20 + 8 + 5);
  EXPECT_EQ(v->identification, 0x1234);
  EXPECT_TRUE(v->dont_fragment);
  EXPECT_FALSE(v->is_fragment());
  EXPECT_TRUE(v->has_l4_header());
  EXPECT_EQ(v->ttl, 61);
  EXPECT_EQ(v->protocol, 17);
  EXPECT_TRUE(v->options.empty());
  EXPECT_EQ(v->payload.size(), 13u);
  EXPECT_EQ(v->payload.data(), pkt.data() + 20);
  // The builder's header checksum verifies.
  EXPECT_EQ(internet_checksum(v->header), 0);
}

TEST(Ipv4, ExposesAndSkipsOptions) {
  // Router Alert (RFC 2113): 94 04 00 00.
  const auto pkt = PacketBuilder()
                       .ipv4("198.18.0.1", "198.18.1.2")
                       .ipv4_options({0x94, 0x04, 0x00, 0x00})
                       .udp(1, 2)
                       .payload("x")
                       .build();
  auto v = parse_ipv4(pkt);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ihl, 6);
  ASSERT_EQ(v->options.size(), 4u);
  EXPECT_EQ(v->options[0], 0x94);
  EXPECT_EQ(v->header.size(), 24u);
  EXPECT_EQ(v->payload.size(), 9u);
  EXPECT_EQ(v->payload.data(), pkt.data() + 24);
  EXPECT_EQ(internet_checksum(v->header), 0);
}

TEST(Ipv4, IgnoresTrailingPadding) {
  const auto pkt = PacketBuilder()
                       .ipv4("198.18.0.1", "198.18.1.2")
                       .udp(1, 2)
                       .trailer({0, 0, 0, 0, 0, 0})
                       .build();
  auto v = parse_ipv4(pkt);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->total_length, 28);
  EXPECT_EQ(v->payload.size(), 8u);
}

TEST(Ipv4, FragmentFields) {
  const auto first =
      PacketBuilder().ipv4("198.18.0.1", "198.18.1.2").fragment(0, true, 77).udp(1, 2).build();
  auto v = parse_ipv4(first);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->more_fragments);
  EXPECT_EQ(v->fragment_offset, 0);
  EXPECT_EQ(v->identification, 77);
  EXPECT_TRUE(v->is_fragment());
  EXPECT_TRUE(v->has_l4_header());

  const auto later = PacketBuilder()
                         .ipv4("198.18.0.1", "198.18.1.2")
                         .fragment(185, false, 77)
                         .protocol(17)
                         .payload("middle")
                         .build();
  v = parse_ipv4(later);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->more_fragments);
  EXPECT_EQ(v->fragment_offset, 185);
  EXPECT_EQ(v->fragment_offset_bytes(), 1480u);
  EXPECT_TRUE(v->is_fragment());
  EXPECT_FALSE(v->has_l4_header());
  EXPECT_EQ(v->payload.size(), 6u);
}

TEST(Ipv4, EveryTruncationIsATypedError) {
  for (const auto& pkt : {udp_packet(), PacketBuilder()
                                            .ipv4("1.2.3.4", "5.6.7.8")
                                            .ipv4_options(std::vector<std::uint8_t>(40, 1))
                                            .tcp(1, 2)
                                            .payload("abc")
                                            .build()}) {
    for (std::size_t n = 0; n < pkt.size(); ++n) {
      auto v = parse_ipv4(Bytes(pkt).first(n));
      ASSERT_FALSE(v.ok()) << "prefix " << n;
      const std::size_t header = (pkt[0] & 0x0f) * 4u;
      EXPECT_EQ(v.error(), n < header ? Error::truncated : Error::bad_length) << "prefix " << n;
    }
    EXPECT_TRUE(parse_ipv4(pkt).ok());
  }
}

TEST(Ipv4, RejectsBadValues) {
  struct Case {
    const char* what;
    std::vector<std::uint8_t> packet;
    Error error;
  };
  const auto base = [] {
    return PacketBuilder().ipv4("198.18.0.1", "198.18.1.2").udp(1, 2).payload("data");
  };
  const Case cases[] = {
      {"IHL 4", base().ipv4_ihl(4).build(), Error::bad_value},
      {"IHL 0", base().ipv4_ihl(0).build(), Error::bad_value},
      {"IHL 4, short input", std::vector<std::uint8_t>{0x44, 0, 0}, Error::bad_value},
      {"version 6", base().version(6).build(), Error::bad_value},
      {"version 0", base().version(0).build(), Error::bad_value},
      {"IHL past the data", base().ipv4_ihl(15).payload("").build(), Error::truncated},
      {"total length < header", base().ipv4_total_length(19).build(), Error::bad_length},
      {"total length < IHL", base().ipv4_options({1, 1, 1, 1}).ipv4_total_length(22).build(),
       Error::bad_length},
      {"total length > data", base().ipv4_total_length(33).build(), Error::bad_length},
      {"total length 0xffff", base().ipv4_total_length(0xffff).build(), Error::bad_length},
      {"empty", {}, Error::truncated},
  };
  for (const Case& c : cases) {
    auto v = parse_ipv4(c.packet);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.error(), c.error) << c.what << ": " << to_string(v.error());
  }
}

TEST(Ipv4, TotalLengthShorterThanDataBoundsThePayload) {
  // A total length that lies short is consistent on its own: the rest counts as padding.
  const auto pkt = PacketBuilder()
                       .ipv4("198.18.0.1", "198.18.1.2")
                       .udp(1, 2)
                       .payload("data")
                       .ipv4_total_length(24)
                       .build();
  auto v = parse_ipv4(pkt);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->payload.size(), 4u);
}

TEST(Ipv4, InternetChecksumMatchesRfc1071Example) {
  // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (before complementing).
  const std::uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(internet_checksum(data), static_cast<std::uint16_t>(~0xddf2));
  // An odd length pads with a zero byte.
  const std::uint8_t odd[] = {0x01};
  EXPECT_EQ(internet_checksum(odd), static_cast<std::uint16_t>(~0x0100));
}

// The definition itself, byte pairs in network order: what the word-at-a-time sum must equal.
std::uint16_t reference_checksum(const std::uint8_t* p, std::size_t n, std::uint32_t initial) {
  std::uint64_t sum = initial;
  for (std::size_t i = 0; i < n; i += 2) {
    sum += (std::uint32_t{p[i]} << 8) | (i + 1 < n ? p[i + 1] : 0);
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xffff);
}

TEST(Ipv4, InternetChecksumEqualsTheDefinitionForEveryLengthAndAlignment) {
  // Every length up to a jumbo-ish reply, at every start alignment, with carries forced by
  // 0xff runs and with large partial sums: a word-order or tail-handling mistake differs.
  std::vector<std::uint8_t> buf(70000 + 8);
  std::uint32_t x = 12345;
  for (auto& b : buf) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 16);
  }
  for (std::size_t i = 3000; i < 3400; ++i) buf[i] = 0xff;
  const std::uint32_t initials[] = {0, 1, 0xffff, 0x1fffe, 0xfffffff0u};
  for (std::size_t align = 0; align < 8; ++align) {
    for (std::size_t n = 0; n < 1600; ++n) {
      const std::uint8_t* p = buf.data() + align + (n % 7) * 431;
      for (std::uint32_t initial : initials) {
        ASSERT_EQ(internet_checksum(Bytes(p, n), initial), reference_checksum(p, n, initial))
            << "length " << n << " align " << align << " initial " << initial;
      }
    }
  }
  for (std::size_t n : {65535u, 65536u, 65537u, 70000u}) {
    EXPECT_EQ(internet_checksum(Bytes(buf.data() + 1, n), 7), reference_checksum(buf.data() + 1, n, 7));
  }
  // A packet with its checksum written in verifies to 0, at an odd start too.
  std::vector<std::uint8_t> pkt(buf.begin() + 1, buf.begin() + 1 + 1232);
  pkt[6] = pkt[7] = 0;
  const std::uint16_t c = internet_checksum(pkt, 0x1234);
  pkt[6] = static_cast<std::uint8_t>(c >> 8);
  pkt[7] = static_cast<std::uint8_t>(c);
  EXPECT_EQ(internet_checksum(pkt, 0x1234), 0);
}

}  // namespace
}  // namespace quicstep::common
