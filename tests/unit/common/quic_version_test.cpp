#include "common/quic_version.hpp"

#include <gtest/gtest.h>

namespace quicstep::common {
namespace {

TEST(QuicVersion, KnowsV1V2AndDraft29Only) {
  EXPECT_TRUE(is_known_quic_version(kQuicV1));
  EXPECT_TRUE(is_known_quic_version(kQuicV2));
  EXPECT_TRUE(is_known_quic_version(kQuicDraft29));
  EXPECT_FALSE(is_known_quic_version(kQuicVersionNegotiation));
  EXPECT_FALSE(is_known_quic_version(0x1a2a3a4a));
  EXPECT_FALSE(is_known_quic_version(0x709a50c4));  // the v2 draft codepoint
}

TEST(QuicVersion, ReservedVersions) {
  EXPECT_TRUE(is_reserved_quic_version(0x0a0a0a0a));
  EXPECT_TRUE(is_reserved_quic_version(0x1a2a3a4a));
  EXPECT_FALSE(is_reserved_quic_version(kQuicV1));
  EXPECT_FALSE(is_reserved_quic_version(kQuicV2));
}

// RFC 9000 §17.2 for v1; RFC 9369 §3.2 for v2.
TEST(QuicVersion, LongPacketTypeBits) {
  struct Case {
    std::uint32_t version;
    std::uint8_t bits;
    LongPacketType type;
  };
  const Case cases[] = {
      {kQuicV1, 0b00, LongPacketType::initial},   {kQuicV1, 0b01, LongPacketType::zero_rtt},
      {kQuicV1, 0b10, LongPacketType::handshake}, {kQuicV1, 0b11, LongPacketType::retry},
      {kQuicV2, 0b01, LongPacketType::initial},   {kQuicV2, 0b10, LongPacketType::zero_rtt},
      {kQuicV2, 0b11, LongPacketType::handshake}, {kQuicV2, 0b00, LongPacketType::retry},
  };
  for (const Case& c : cases) {
    const std::uint8_t first = static_cast<std::uint8_t>(0xc0 | (c.bits << 4) | 0x0f);
    EXPECT_EQ(long_packet_type(c.version, first), c.type) << c.version << " " << int{c.bits};
    EXPECT_EQ(long_type_bits(c.version, c.type), c.bits);
  }
  EXPECT_FALSE(long_packet_type(0x1a2a3a4a, 0xc0).has_value());
  EXPECT_FALSE(long_type_bits(0, LongPacketType::initial).has_value());
}

TEST(QuicVersion, LabelsDifferForV2) {
  EXPECT_EQ(find_quic_version(kQuicV1)->key_label, "quic key");
  EXPECT_EQ(find_quic_version(kQuicV1)->hp_label, "quic hp");
  EXPECT_EQ(find_quic_version(kQuicV2)->key_label, "quicv2 key");
  EXPECT_EQ(find_quic_version(kQuicV2)->iv_label, "quicv2 iv");
  EXPECT_EQ(find_quic_version(kQuicV2)->hp_label, "quicv2 hp");
  EXPECT_EQ(find_quic_version(kQuicV2)->ku_label, "quicv2 ku");
  EXPECT_EQ(to_string(LongPacketType::handshake), "handshake");
}

}  // namespace
}  // namespace quicstep::common
