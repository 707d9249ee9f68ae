#include "common/udp.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/packet_builder.hpp"

namespace quicstep::common {
namespace {

using test::PacketBuilder;

PacketBuilder udp() {
  PacketBuilder b;
  b.ipv4("198.18.0.1", "198.18.1.2").udp(40000, 443);
  return b;
}

TEST(Udp, ParsesHeaderAndPayload) {
  const auto seg = udp().payload("payload").build_transport();
  auto v = parse_udp(seg);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->src_port, 40000);
  EXPECT_EQ(v->dst_port, 443);
  EXPECT_EQ(v->length, 15);
  EXPECT_NE(v->checksum, 0);
  EXPECT_EQ(std::string(v->payload.begin(), v->payload.end()), "payload");
  EXPECT_EQ(v->payload.data(), seg.data() + 8);
}

TEST(Udp, EmptyPayload) {
  auto v = parse_udp(udp().build_transport());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->length, 8);
  EXPECT_TRUE(v->payload.empty());
}

TEST(Udp, LengthBoundsThePayload) {
  auto seg = udp().payload("payload").build_transport();
  seg.push_back(0xee);  // not counted by the UDP length
  auto v = parse_udp(seg);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->payload.size(), 7u);
}

TEST(Udp, EveryTruncationIsATypedError) {
  const auto seg = udp().payload("abcdefgh").build_transport();
  for (std::size_t n = 0; n < seg.size(); ++n) {
    auto v = parse_udp(Bytes(seg).first(n));
    ASSERT_FALSE(v.ok()) << "prefix " << n;
    EXPECT_EQ(v.error(), n < 8 ? Error::truncated : Error::bad_length) << "prefix " << n;
  }
}

TEST(Udp, FirstFragmentAllowsAShortDatagram) {
  const auto seg = udp().payload("abcdefgh").build_transport();
  for (std::size_t n = 8; n <= seg.size(); ++n) {
    auto v = parse_udp(Bytes(seg).first(n), UdpExtent::first_fragment);
    ASSERT_TRUE(v.ok()) << "prefix " << n;
    EXPECT_EQ(v->length, 16);
    EXPECT_EQ(v->payload.size(), n - 8);
  }
  auto v = parse_udp(Bytes(seg).first(7), UdpExtent::first_fragment);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), Error::truncated);
}

TEST(Udp, RejectsBadLengths) {
  for (const std::uint16_t length : {0, 1, 7, 17, 0xffff}) {
    auto v = parse_udp(udp().payload("abcdefgh").udp_length(length).build_transport());
    ASSERT_FALSE(v.ok()) << length;
    EXPECT_EQ(v.error(), Error::bad_length) << length;
  }
  // Under 8 is wrong even for a first fragment.
  auto v = parse_udp(udp().udp_length(4).build_transport(), UdpExtent::first_fragment);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), Error::bad_length);
}

}  // namespace
}  // namespace quicstep::common
