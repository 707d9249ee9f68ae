#include "common/tcp.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/packet_builder.hpp"

namespace quicstep::common {
namespace {

using test::PacketBuilder;
namespace tf = test::tcp;

PacketBuilder tcp() {
  PacketBuilder b;
  b.ipv4("198.18.0.1", "198.18.1.2").tcp(40000, 443);
  return b;
}

TEST(Tcp, ParsesHeaderFields) {
  const auto seg = tcp()
                       .seq(0x01020304)
                       .ack(0xa0b0c0d0)
                       .flags(tf::kAck | tf::kPsh)
                       .window(512)
                       .payload("\x16\x03\x01")
                       .build_transport();
  auto v = parse_tcp(seg);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->src_port, 40000);
  EXPECT_EQ(v->dst_port, 443);
  EXPECT_EQ(v->seq, 0x01020304u);
  EXPECT_EQ(v->ack, 0xa0b0c0d0u);
  EXPECT_EQ(v->data_offset, 5);
  EXPECT_EQ(v->header_length(), 20u);
  EXPECT_TRUE(v->ack_flag());
  EXPECT_TRUE(v->psh());
  EXPECT_FALSE(v->syn());
  EXPECT_FALSE(v->fin());
  EXPECT_FALSE(v->rst());
  EXPECT_EQ(v->window, 512);
  EXPECT_TRUE(v->options.empty());
  ASSERT_EQ(v->payload.size(), 3u);
  EXPECT_EQ(v->payload[0], 0x16);
}

TEST(Tcp, FlagsAreIndependentBits) {
  const std::pair<std::uint8_t, bool (TcpView::*)() const> flags[] = {
      {tf::kSyn, &TcpView::syn},
      {tf::kFin, &TcpView::fin},
      {tf::kRst, &TcpView::rst},
      {tf::kPsh, &TcpView::psh},
      {tf::kAck, &TcpView::ack_flag}};
  for (const auto& [bit, getter] : flags) {
    auto v = parse_tcp(tcp().flags(bit).build_transport());
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->flags, bit);
    for (const auto& [other_bit, other] : flags)
      EXPECT_EQ(((*v).*other)(), other_bit == bit) << int(bit);
  }
  // The library's bit values agree with the builder's.
  EXPECT_EQ(tcp_flag::kSyn, tf::kSyn);
  EXPECT_EQ(tcp_flag::kAck, tf::kAck);
}

TEST(Tcp, SkipsOptions) {
  // MSS 1460, SACK permitted, window scale 7, padded to 12 bytes.
  const auto seg = tcp()
                       .flags(tf::kSyn)
                       .tcp_options({2, 4, 0x05, 0xb4, 4, 2, 3, 3, 7})
                       .payload("p")
                       .build_transport();
  auto v = parse_tcp(seg);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->data_offset, 8);
  EXPECT_EQ(v->options.size(), 12u);
  EXPECT_EQ(v->options[0], 2);
  ASSERT_EQ(v->payload.size(), 1u);
  EXPECT_EQ(v->payload.data(), seg.data() + 32);
}

TEST(Tcp, EveryTruncationIsATypedError) {
  const auto seg =
      tcp().tcp_options(std::vector<std::uint8_t>(40, 1)).build_transport();  // data offset 15
  ASSERT_EQ(seg.size(), 60u);
  for (std::size_t n = 0; n < seg.size(); ++n) {
    auto v = parse_tcp(Bytes(seg).first(n));
    ASSERT_FALSE(v.ok()) << "prefix " << n;
    EXPECT_EQ(v.error(), Error::truncated) << "prefix " << n;
  }
  EXPECT_TRUE(parse_tcp(seg).ok());
}

TEST(Tcp, RejectsDataOffsetUnderFive) {
  for (std::uint8_t offset = 0; offset < 5; ++offset) {
    const auto seg = tcp().tcp_data_offset(offset).payload("abc").build_transport();
    auto v = parse_tcp(seg);
    ASSERT_FALSE(v.ok()) << int(offset);
    EXPECT_EQ(v.error(), Error::bad_value) << int(offset);
    // Also when the input is cut short after the data-offset byte.
    v = parse_tcp(Bytes(seg).first(13));
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error(), Error::bad_value);
  }
}

TEST(Tcp, DataOffsetPastTheSegmentIsTruncated) {
  auto v = parse_tcp(tcp().tcp_data_offset(15).payload("short").build_transport());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), Error::truncated);
}

}  // namespace
}  // namespace quicstep::common
