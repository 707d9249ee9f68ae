#include "common/quic_frames.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/byte_writer.hpp"
#include "support/client_hello_builder.hpp"
#include "support/rfc_client_hellos.hpp"

namespace quicstep::common {
namespace {

using test::ByteVector;
using test::crypto_frame;

ByteVector concat(std::initializer_list<ByteVector> parts) {
  ByteVector out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(QuicFrames, Rfc9001ClientInitialPayload) {
  const ByteVector payload = test::rfc9001_client_initial_payload();
  ASSERT_EQ(payload.size(), 1162u);
  auto frames = parse_initial_frames(payload);
  ASSERT_TRUE(frames.ok()) << to_string(frames.error());
  ASSERT_EQ(frames->crypto.size(), 1u);
  EXPECT_EQ(frames->crypto[0].offset, 0u);
  EXPECT_EQ(frames->crypto[0].data.size(), 0xf1u);
  EXPECT_EQ(frames->crypto[0].data[0], 0x01);  // msg_type client_hello
  EXPECT_EQ(frames->padding_bytes, 917u);
  EXPECT_EQ(frames->frame_count, 2u);  // the CRYPTO frame and one PADDING run
  EXPECT_TRUE(frames->ack_eliciting);
  EXPECT_FALSE(frames->ack);
}

TEST(QuicFrames, EveryTruncationOfTheRfcCryptoFrameIsTruncated) {
  const ByteVector payload = test::rfc9001_client_initial_payload();
  const std::size_t frame_end = 4 + 0xf1;  // 06 00 40f1, then the data
  for (std::size_t n = 1; n < frame_end; ++n) {
    auto frames = parse_initial_frames(Bytes(payload.data(), n));
    ASSERT_FALSE(frames.ok()) << n;
    EXPECT_EQ(frames.error(), Error::truncated) << n;
  }
  EXPECT_TRUE(parse_initial_frames(Bytes(payload.data(), frame_end)).ok());
}

TEST(QuicFrames, ReaderYieldsEachFrameInOrder) {
  const ByteVector data{1, 2, 3, 4};
  ByteWriter w;
  w.u8(0x01).u8(0x00).u8(0x00).u8(0x00);                 // PING, PADDING x3
  w.u8(0x02).varint(10).varint(25).varint(1).varint(2);  // ACK 8..10
  w.varint(0).varint(3);                                 // gap 0: 6 → range 3..6
  w.bytes(crypto_frame(100, data));
  w.u8(0x03).varint(0).varint(0).varint(0).varint(0).varint(5).varint(6).varint(7);
  w.u8(0x1c).varint(0x0a).varint(0x06).varint(3).bytes(ByteVector{'b', 'a', 'd'});
  const ByteVector payload = w.take();

  QuicFrameReader reader(payload);
  auto f = reader.next();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, QuicFrameType::ping);
  f = reader.next();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, QuicFrameType::padding);
  EXPECT_EQ(f->padding_length, 3u);
  f = reader.next();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, QuicFrameType::ack);
  EXPECT_EQ(f->ack.largest_acknowledged, 10u);
  EXPECT_EQ(f->ack.ack_delay, 25u);
  EXPECT_EQ(f->ack.range_count, 1u);
  EXPECT_EQ(f->ack.smallest_acknowledged, 3u);
  f = reader.next();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, QuicFrameType::crypto);
  EXPECT_EQ(f->crypto.offset, 100u);
  EXPECT_EQ(ByteVector(f->crypto.data.begin(), f->crypto.data.end()), data);
  f = reader.next();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, QuicFrameType::ack_ecn);
  EXPECT_TRUE(f->ack.ecn);
  EXPECT_EQ(f->ack.ect0, 5u);
  EXPECT_EQ(f->ack.ect1, 6u);
  EXPECT_EQ(f->ack.ecn_ce, 7u);
  f = reader.next();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, QuicFrameType::connection_close);
  EXPECT_EQ(f->close.error_code, 0x0au);
  EXPECT_EQ(f->close.frame_type, 0x06u);
  EXPECT_EQ(f->close.reason.size(), 3u);
  EXPECT_TRUE(reader.done());

  auto all = parse_initial_frames(payload);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->ping && all->ack && all->connection_close);
  EXPECT_EQ(all->frame_count, 6u);
}

TEST(QuicFrames, EveryTruncationIsATypedErrorAndTheReaderStays) {
  ByteWriter w;
  w.u8(0x03).varint(1000).varint(25).varint(2).varint(10);
  w.varint(1).varint(5).varint(0).varint(0).varint(1).varint(2).varint(3);
  w.u8(0x1c).varint(0x100).varint(0).varint(4).bytes(ByteVector{'a', 'b', 'c', 'd'});
  w.bytes(crypto_frame(70000, ByteVector(300, 0x41)));
  const ByteVector payload = w.take();
  ASSERT_TRUE(parse_initial_frames(payload).ok());
  for (std::size_t n = 1; n < payload.size(); ++n) {
    const Bytes prefix(payload.data(), n);
    QuicFrameReader reader(prefix);
    while (!reader.done()) {
      const std::size_t before = reader.position();
      auto f = reader.next();
      if (f.ok()) continue;
      EXPECT_EQ(f.error(), Error::truncated) << n;
      EXPECT_EQ(reader.position(), before) << n;
      break;
    }
  }
}

TEST(QuicFrames, FramesNotAllowedInInitialAreBadValue) {
  // STREAM, NEW_TOKEN, MAX_DATA, application CONNECTION_CLOSE, HANDSHAKE_DONE, DATAGRAM.
  for (std::uint8_t type : {0x04, 0x05, 0x07, 0x08, 0x0f, 0x10, 0x18, 0x1d, 0x1e, 0x30, 0x3f}) {
    const ByteVector payload{type, 0x00, 0x00, 0x00, 0x00};
    auto frames = parse_initial_frames(payload);
    ASSERT_FALSE(frames.ok()) << int{type};
    EXPECT_EQ(frames.error(), Error::bad_value) << int{type};
  }
}

TEST(QuicFrames, NonMinimalFrameTypeEncodingIsBadValue) {
  const ByteVector payload{0x40, 0x06, 0x00, 0x01, 0xaa};  // CRYPTO as a 2-byte varint
  auto frames = parse_initial_frames(payload);
  ASSERT_FALSE(frames.ok());
  EXPECT_EQ(frames.error(), Error::bad_value);
}

TEST(QuicFrames, EmptyPayloadIsBadValue) {
  auto frames = parse_initial_frames({});
  ASSERT_FALSE(frames.ok());
  EXPECT_EQ(frames.error(), Error::bad_value);
}

TEST(QuicFrames, AckRangesBelowZeroAreBadValue) {
  ByteWriter first_too_long;  // largest 5, first range 6
  first_too_long.u8(0x02).varint(5).varint(0).varint(0).varint(6);
  ByteWriter gap_too_long;  // 5..3, then a gap of 2 (skipping 2, 1): next largest is -1
  gap_too_long.u8(0x02).varint(5).varint(0).varint(1).varint(2).varint(2).varint(0);
  ByteWriter range_too_long;  // 10..8, gap 0 → next largest 6, length 7
  range_too_long.u8(0x02).varint(10).varint(0).varint(1).varint(2).varint(0).varint(7);
  for (ByteWriter* w : {&first_too_long, &gap_too_long, &range_too_long}) {
    auto frames = parse_initial_frames(w->buffer());
    ASSERT_FALSE(frames.ok());
    EXPECT_EQ(frames.error(), Error::bad_value);
  }
  ByteWriter exact;  // 10..8, gap 0 → 6..0
  exact.u8(0x02).varint(10).varint(0).varint(1).varint(2).varint(0).varint(6);
  auto frames = parse_initial_frames(exact.buffer());
  ASSERT_TRUE(frames.ok());
}

TEST(QuicFrames, HugeAckRangeCountEndsAsTruncated) {
  ByteWriter w;
  w.u8(0x02).varint(1000).varint(0).varint((std::uint64_t{1} << 62) - 1).varint(0);
  auto frames = parse_initial_frames(w.buffer());
  ASSERT_FALSE(frames.ok());
  EXPECT_EQ(frames.error(), Error::truncated);
}

TEST(QuicFrames, CryptoBadLengths) {
  ByteWriter past_end;  // length says 10, 3 bytes follow
  past_end.u8(0x06).varint(0).varint(10).bytes(ByteVector{1, 2, 3});
  auto frames = parse_initial_frames(past_end.buffer());
  ASSERT_FALSE(frames.ok());
  EXPECT_EQ(frames.error(), Error::truncated);

  ByteWriter beyond_2_62;  // offset + length > 2^62 - 1
  beyond_2_62.u8(0x06).varint((std::uint64_t{1} << 62) - 2).varint(2).bytes(ByteVector{1, 2});
  frames = parse_initial_frames(beyond_2_62.buffer());
  ASSERT_FALSE(frames.ok());
  EXPECT_EQ(frames.error(), Error::bad_value);
}

TEST(QuicFrames, ChromiumStyleSplitAndReorderedCryptoFrames) {
  const ByteVector hello = test::ClientHelloBuilder::chrome_quic("example.org").build();
  const Bytes h(hello);
  const ByteVector payload = concat({crypto_frame(900, h.subspan(900, 100)), ByteVector(5, 0),
                                     crypto_frame(0, h.subspan(0, 500)), ByteVector{0x01},
                                     crypto_frame(500, h.subspan(500, 400))});
  auto frames = parse_initial_frames(payload);
  ASSERT_TRUE(frames.ok());
  ASSERT_EQ(frames->crypto.size(), 3u);
  EXPECT_EQ(frames->crypto[0].offset, 900u);
  EXPECT_EQ(frames->crypto[1].offset, 0u);
  EXPECT_EQ(frames->crypto[2].offset, 500u);
  EXPECT_EQ(frames->crypto[2].data.size(), 400u);
  EXPECT_EQ(frames->padding_bytes, 5u);
}

TEST(QuicFrames, TooManyCryptoFramesIsLimitExceeded) {
  ByteVector payload;
  for (std::size_t i = 0; i <= kMaxCryptoFragmentsPerPacket; ++i) {
    const ByteVector f = crypto_frame(i, ByteVector{0x01});
    payload.insert(payload.end(), f.begin(), f.end());
  }
  auto frames = parse_initial_frames(payload);
  ASSERT_FALSE(frames.ok());
  EXPECT_EQ(frames.error(), Error::limit_exceeded);
  payload.resize(payload.size() - 4);  // one frame fewer: accepted
  EXPECT_TRUE(parse_initial_frames(payload).ok());
}

}  // namespace
}  // namespace quicstep::common
