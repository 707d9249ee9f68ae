#include "common/byte_reader.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/byte_writer.hpp"

namespace quicstep::common {
namespace {

TEST(ByteReader, ReadsBigEndianIntegers) {
  const std::vector<std::uint8_t> data{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a};
  ByteReader r(data);
  EXPECT_EQ(*r.u8(), 0x01);
  EXPECT_EQ(*r.u16(), 0x0203);
  EXPECT_EQ(*r.u24(), 0x040506u);
  EXPECT_EQ(*r.u32(), 0x0708090au);
  EXPECT_TRUE(r.empty());
}

TEST(ByteReader, FailedReadConsumesNothing) {
  const std::vector<std::uint8_t> data{0x00, 0x05, 0xaa};
  ByteReader r(data);
  auto b = r.u16_prefixed();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error(), Error::truncated);
  EXPECT_EQ(r.position(), 0u);
  EXPECT_EQ(*r.u16(), 5);
}

// RFC 9000 §A.1 sample varints.
TEST(ByteReader, DecodesRfc9000Varints) {
  struct Case {
    std::vector<std::uint8_t> bytes;
    std::uint64_t value;
  };
  const Case cases[] = {
      {{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 151288809941952652ull},
      {{0x9d, 0x7f, 0x3e, 0x7d}, 494878333},
      {{0x7b, 0xbd}, 15293},
      {{0x25}, 37},
      {{0x40, 0x25}, 37},
  };
  for (const auto& c : cases) {
    ByteReader r(c.bytes);
    auto v = r.varint();
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, c.value);
    EXPECT_TRUE(r.empty());
    // Every truncation fails cleanly.
    for (std::size_t n = 0; n < c.bytes.size(); ++n) {
      ByteReader t(Bytes(c.bytes).first(n));
      EXPECT_EQ(t.varint().error(), Error::truncated);
      EXPECT_EQ(t.position(), 0u);
    }
  }
}

TEST(ByteWriter, VarintRoundTrip) {
  for (std::uint64_t v : {0ull, 63ull, 64ull, 16383ull, 16384ull, (1ull << 30) - 1, 1ull << 30, (1ull << 62) - 1}) {
    ByteWriter w;
    w.varint(v);
    auto buf = w.take();
    ByteReader r(buf);
    EXPECT_EQ(*r.varint(), v);
    EXPECT_TRUE(r.empty());
  }
}

}  // namespace
}  // namespace quicstep::common
