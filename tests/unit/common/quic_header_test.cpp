#include "common/quic_header.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/byte_writer.hpp"
#include "quic_test_vectors.hpp"

namespace quicstep::common {
namespace {

using quicstep::testing::from_hex;
using Vec = std::vector<std::uint8_t>;

Vec to_vec(Bytes b) { return Vec(b.begin(), b.end()); }

// A long header of the given first byte and version, with raw CIDs and a tail.
Vec long_header(std::uint8_t first, std::uint32_t version, const Vec& dcid, const Vec& scid,
                const Vec& tail) {
  ByteWriter w;
  w.u8(first).u32(version);
  w.u8(static_cast<std::uint8_t>(dcid.size())).bytes(dcid);
  w.u8(static_cast<std::uint8_t>(scid.size())).bytes(scid);
  w.bytes(tail);
  return w.take();
}

TEST(QuicHeader, ParsesRfc9001ClientInitial) {
  const Vec pkt = from_hex(testing::kV1ClientInitial);
  auto h = parse_quic_header(pkt, 8);
  ASSERT_TRUE(h.ok()) << to_string(h.error());
  EXPECT_EQ(h->kind, QuicPacketKind::long_header);
  EXPECT_TRUE(h->is_long());
  EXPECT_TRUE(h->fixed_bit);
  EXPECT_EQ(h->version, kQuicV1);
  EXPECT_EQ(h->type, LongPacketType::initial);
  EXPECT_EQ(to_vec(h->dcid), from_hex(testing::kRfcDcid));
  EXPECT_TRUE(h->scid.empty());
  EXPECT_TRUE(h->token.empty());
  EXPECT_EQ(h->length, 1182u);
  EXPECT_EQ(h->pn_offset, 18u);
  EXPECT_EQ(h->packet.size(), 1200u);
  EXPECT_EQ(h->packet.data(), pkt.data());
}

TEST(QuicHeader, ParsesRfc9369ClientInitialWithV2TypeBits) {
  const Vec pkt = from_hex(testing::kV2ClientInitial);
  auto h = parse_quic_header(pkt, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->version, kQuicV2);
  EXPECT_EQ(h->type, LongPacketType::initial);  // 0xd7: type bits 01
  EXPECT_EQ(h->length, 1182u);
  EXPECT_EQ(h->pn_offset, 18u);
  EXPECT_EQ(h->packet.size(), 1200u);
}

TEST(QuicHeader, ParsesRfcServerInitials) {
  for (auto hex : {testing::kV1ServerInitial, testing::kV2ServerInitial}) {
    const Vec pkt = from_hex(hex);
    auto h = parse_quic_header(pkt, 0);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->type, LongPacketType::initial);
    EXPECT_TRUE(h->dcid.empty());
    EXPECT_EQ(to_vec(h->scid), from_hex(testing::kRfcServerScid));
    EXPECT_EQ(h->length, 117u);
    EXPECT_EQ(h->pn_offset, 18u);
    EXPECT_EQ(h->packet.size(), 135u);
  }
}

TEST(QuicHeader, EveryTruncationOfAnInitialIsTruncated) {
  for (auto hex : {testing::kV1ClientInitial, testing::kV2ClientInitial,
                   testing::kV1ServerInitial}) {
    const Vec pkt = from_hex(hex);
    for (std::size_t n = 0; n < pkt.size(); ++n) {
      auto h = parse_quic_header(Bytes(pkt).first(n), 8);
      ASSERT_FALSE(h.ok()) << n;
      EXPECT_EQ(h.error(), Error::truncated) << n;
    }
  }
}

TEST(QuicHeader, ParsesRetryOfBothVersions) {
  for (auto hex : {testing::kV1Retry, testing::kV2Retry}) {
    const Vec pkt = from_hex(hex);
    auto h = parse_quic_header(pkt, 0);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->type, LongPacketType::retry);
    EXPECT_EQ(to_vec(h->scid), from_hex(testing::kRfcServerScid));
    EXPECT_EQ(to_vec(h->token), Vec({'t', 'o', 'k', 'e', 'n'}));
    EXPECT_EQ(h->retry_integrity_tag.size(), 16u);
    EXPECT_EQ(h->retry_integrity_tag.data(), pkt.data() + pkt.size() - 16);
    EXPECT_FALSE(h->has_packet_number());
    EXPECT_EQ(h->packet.size(), pkt.size());
    // Without room for the tag: truncated.
    auto cut = parse_quic_header(Bytes(pkt).first(15 + 5), 0);
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.error(), Error::truncated);
  }
}

TEST(QuicHeader, RejectsCidsLongerThan20ForKnownVersions) {
  const Vec tail{0x00, 0x01, 0x00};  // token length 0, Length 1, one byte
  for (std::uint32_t version : {kQuicV1, kQuicV2, kQuicDraft29}) {
    const auto first =
        static_cast<std::uint8_t>(0xc0 | (*long_type_bits(version, LongPacketType::initial) << 4));
    auto ok = parse_quic_header(long_header(first, version, Vec(20, 1), Vec(20, 2), tail), 0);
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->type, LongPacketType::initial);
    auto d = parse_quic_header(long_header(first, version, Vec(21, 1), {}, tail), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error(), Error::bad_value);
    auto s = parse_quic_header(long_header(first, version, {}, Vec(21, 2), tail), 0);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error(), Error::bad_value);
  }
}

// RFC 8999: an unknown version still exposes its CIDs (up to 255 bytes), nothing more.
TEST(QuicHeader, UnknownVersionKeepsInvariantFields) {
  const Vec dcid(200, 0xab), scid(255, 0xcd);
  const Vec pkt = long_header(0xc5, 0x1a2a3a4a, dcid, scid, Vec(50, 0x77));
  auto h = parse_quic_header(pkt, 0);
  ASSERT_TRUE(h.ok()) << to_string(h.error());
  EXPECT_EQ(h->kind, QuicPacketKind::unknown_version);
  EXPECT_EQ(h->version, 0x1a2a3a4au);
  EXPECT_FALSE(h->type.has_value());
  EXPECT_EQ(to_vec(h->dcid), dcid);
  EXPECT_EQ(to_vec(h->scid), scid);
  EXPECT_FALSE(h->has_packet_number());
  EXPECT_EQ(h->packet.size(), pkt.size());
  for (std::size_t n = 0; n < 1 + 4 + 1 + dcid.size() + 1 + scid.size(); ++n) {
    auto cut = parse_quic_header(Bytes(pkt).first(n), 0);
    ASSERT_FALSE(cut.ok()) << n;
    EXPECT_EQ(cut.error(), Error::truncated);
  }
}

TEST(QuicHeader, VersionNegotiation) {
  const Vec versions = from_hex("00000001 6b3343cf 0a0a0a0a");
  const Vec pkt = long_header(0x80 | 0x2a, kQuicVersionNegotiation, Vec(8, 1), Vec(30, 2),
                              versions);
  auto h = parse_quic_header(pkt, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->kind, QuicPacketKind::version_negotiation);
  EXPECT_FALSE(h->fixed_bit);  // random in VN
  EXPECT_EQ(h->dcid.size(), 8u);
  EXPECT_EQ(h->scid.size(), 30u);  // VN echoes CIDs of any length
  ASSERT_EQ(h->version_count(), 3u);
  EXPECT_EQ(h->version_at(0), kQuicV1);
  EXPECT_EQ(h->version_at(1), kQuicV2);
  EXPECT_EQ(h->version_at(2), 0x0a0a0a0au);
  EXPECT_EQ(h->packet.size(), pkt.size());

  Vec odd = pkt;
  odd.push_back(0x00);
  auto bad = parse_quic_header(odd, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), Error::bad_length);
}

TEST(QuicHeader, ShortHeader) {
  const Vec pkt = from_hex("41 0102030405060708 aabbccddeeff");
  auto h = parse_quic_header(pkt, 8);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->kind, QuicPacketKind::short_header);
  EXPECT_FALSE(h->is_long());
  EXPECT_TRUE(h->fixed_bit);
  EXPECT_EQ(to_vec(h->dcid), from_hex("0102030405060708"));
  EXPECT_EQ(h->pn_offset, 9u);
  EXPECT_EQ(h->packet.size(), pkt.size());
  for (std::size_t n = 0; n < 9; ++n) {
    auto cut = parse_quic_header(Bytes(pkt).first(n), 8);
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.error(), Error::truncated);
  }
  auto too_long = parse_quic_header(pkt, 21);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error(), Error::bad_value);
}

// RFC 9287: the fixed bit may be greased to 0; the parser records it and goes on.
TEST(QuicHeader, GreasedFixedBitIsRecorded) {
  Vec pkt = from_hex(testing::kV1ClientInitial);
  pkt[0] &= 0xbf;
  auto h = parse_quic_header(pkt, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->fixed_bit);
  EXPECT_EQ(h->type, LongPacketType::initial);
  EXPECT_EQ(h->packet.size(), 1200u);

  const Vec short_pkt = from_hex("01 aabbccdd");
  auto s = parse_quic_header(short_pkt, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->fixed_bit);
  EXPECT_EQ(s->kind, QuicPacketKind::short_header);
}

TEST(QuicHeader, FastClassification) {
  const Vec initial = from_hex(testing::kV2ClientInitial);
  EXPECT_EQ(classify_first_byte(initial), FirstByteClass::long_header);
  EXPECT_EQ(classify_first_byte(from_hex("40 00")), FirstByteClass::short_header);
  EXPECT_EQ(classify_first_byte(Bytes{}), FirstByteClass::empty);
  EXPECT_TRUE(is_long_header(0x80));
  EXPECT_FALSE(is_long_header(0x7f));
  EXPECT_EQ(*peek_quic_version(initial), kQuicV2);
  EXPECT_EQ(peek_quic_version(from_hex("c0 0000")).error(), Error::truncated);
  EXPECT_EQ(peek_quic_version(from_hex("40 00000001")).error(), Error::bad_value);
  EXPECT_EQ(to_string(QuicPacketKind::version_negotiation), "version_negotiation");
}

// A server's first flight: Initial + Handshake + 1-RTT in one datagram (RFC 9000 §12.2).
TEST(QuicCoalesced, InitialHandshakeAndShortHeader) {
  Vec datagram = from_hex(testing::kV1ServerInitial);
  const Vec scid = from_hex(testing::kRfcServerScid);
  ByteWriter hs_tail;
  hs_tail.varint(30).bytes(Vec(30, 0x5a));  // Length 30, no token in Handshake packets
  const Vec handshake = long_header(0xe1, kQuicV1, {}, scid, hs_tail.take());
  const Vec short_pkt = from_hex("43 00112233 445566778899aabbccddeeff0011223344");
  datagram.insert(datagram.end(), handshake.begin(), handshake.end());
  datagram.insert(datagram.end(), short_pkt.begin(), short_pkt.end());

  CoalescedPackets packets(datagram, 0);
  std::vector<QuicHeader> seen;
  while (!packets.done()) {
    auto h = packets.next();
    ASSERT_TRUE(h.ok()) << to_string(h.error());
    seen.push_back(*h);
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].type, LongPacketType::initial);
  EXPECT_EQ(seen[0].packet.size(), 135u);
  EXPECT_EQ(seen[1].type, LongPacketType::handshake);
  EXPECT_EQ(seen[1].packet.data(), datagram.data() + 135);
  EXPECT_EQ(seen[1].packet.size(), handshake.size());
  EXPECT_EQ(seen[1].length, 30u);
  EXPECT_EQ(seen[2].kind, QuicPacketKind::short_header);
  EXPECT_EQ(seen[2].packet.size(), short_pkt.size());
  EXPECT_EQ(packets.offset(), datagram.size());
}

TEST(QuicCoalesced, V2InitialThenHandshake) {
  Vec datagram = from_hex(testing::kV2ServerInitial);
  ByteWriter tail;
  tail.varint(20).bytes(Vec(20, 0x11));
  const Vec handshake = long_header(0xf0, kQuicV2, {}, Vec(8, 3), tail.take());  // v2: 11
  datagram.insert(datagram.end(), handshake.begin(), handshake.end());
  CoalescedPackets packets(datagram, 0);
  EXPECT_EQ(packets.next()->type, LongPacketType::initial);
  EXPECT_EQ(packets.next()->type, LongPacketType::handshake);
  EXPECT_TRUE(packets.done());
}

TEST(QuicCoalesced, StopsAtTheFirstError) {
  Vec datagram = from_hex(testing::kV1ServerInitial);
  const Vec broken = from_hex("e1 00000001 00 08 0102");  // SCID cut short
  datagram.insert(datagram.end(), broken.begin(), broken.end());
  CoalescedPackets packets(datagram, 0);
  ASSERT_TRUE(packets.next().ok());
  ASSERT_FALSE(packets.done());
  auto second = packets.next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error(), Error::truncated);
  EXPECT_TRUE(packets.done());
}

TEST(QuicCoalesced, TrailingZerosParseAsShortHeaderWithoutFixedBit) {
  Vec datagram = from_hex(testing::kV1ServerInitial);
  datagram.resize(datagram.size() + 40, 0x00);
  CoalescedPackets packets(datagram, 0);
  ASSERT_TRUE(packets.next().ok());
  auto pad = packets.next();
  ASSERT_TRUE(pad.ok());
  EXPECT_EQ(pad->kind, QuicPacketKind::short_header);
  EXPECT_FALSE(pad->fixed_bit);
  EXPECT_EQ(pad->packet.size(), 40u);
  EXPECT_TRUE(packets.done());
}

TEST(QuicCoalesced, EmptyDatagramIsDone) {
  CoalescedPackets packets(Bytes{}, 0);
  EXPECT_TRUE(packets.done());
}

}  // namespace
}  // namespace quicstep::common
