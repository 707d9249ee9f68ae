#include "common/crypto_reassembly.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "common/quic_frames.hpp"
#include "common/tls_client_hello.hpp"
#include "support/client_hello_builder.hpp"
#include "support/rfc_client_hellos.hpp"

namespace quicstep::common {
namespace {

using test::ByteVector;
using test::ClientHelloBuilder;

struct Piece {
  std::size_t offset;
  std::size_t length;
};

// Cuts `n` bytes into pieces of `size` bytes.
std::vector<Piece> cut(std::size_t n, std::size_t size) {
  std::vector<Piece> pieces;
  for (std::size_t pos = 0; pos < n; pos += size) pieces.push_back({pos, std::min(size, n - pos)});
  return pieces;
}

void add_all(CryptoReassembler& r, const ByteVector& stream, const std::vector<Piece>& pieces) {
  for (const Piece& p : pieces) {
    ASSERT_TRUE(r.add(p.offset, Bytes(stream).subspan(p.offset, p.length)).ok()) << p.offset;
  }
}

bool holds(const CryptoReassembler& r, const ByteVector& stream) {
  return std::equal(r.contiguous().begin(), r.contiguous().end(), stream.begin(), stream.end());
}

class CryptoReassembly : public ::testing::Test {
 protected:
  ByteVector hello_ = ClientHelloBuilder::chrome_quic("split.example.com").build();
};

TEST_F(CryptoReassembly, ForwardOrder) {
  CryptoReassembler r;
  const auto pieces = cut(hello_.size(), 300);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    ASSERT_TRUE(r.add(pieces[i].offset, Bytes(hello_).subspan(pieces[i].offset, pieces[i].length)).ok());
    EXPECT_EQ(r.contiguous_length(), pieces[i].offset + pieces[i].length);
    EXPECT_FALSE(r.has_gaps());
  }
  EXPECT_TRUE(holds(r, hello_));
}

TEST_F(CryptoReassembly, ReverseOrderCompletesOnlyWithTheFirstByte) {
  CryptoReassembler r;
  auto pieces = cut(hello_.size(), 97);
  std::reverse(pieces.begin(), pieces.end());
  for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
    ASSERT_TRUE(r.add(pieces[i].offset, Bytes(hello_).subspan(pieces[i].offset, pieces[i].length)).ok());
    EXPECT_EQ(r.contiguous_length(), 0u);
    EXPECT_TRUE(r.has_gaps());
  }
  EXPECT_EQ(r.end_offset(), hello_.size());
  add_all(r, hello_, {pieces.back()});
  EXPECT_EQ(r.contiguous_length(), hello_.size());
  EXPECT_TRUE(holds(r, hello_));
}

TEST_F(CryptoReassembly, OverlappingAndDuplicatedFragments) {
  CryptoReassembler r;
  add_all(r, hello_, {{500, 700}, {0, 300}, {250, 400}, {500, 700}, {1100, hello_.size() - 1100},
                      {0, 1}, {299, 2}});
  EXPECT_EQ(r.contiguous_length(), hello_.size());
  EXPECT_TRUE(holds(r, hello_));
}

TEST_F(CryptoReassembly, ShuffledOneByteFragments) {
  std::vector<std::size_t> order(hello_.size());
  std::iota(order.begin(), order.end(), 0);
  std::uint32_t seed = 7;
  for (std::size_t i = order.size(); i > 1; --i) {
    seed = seed * 1664525u + 1013904223u;
    std::swap(order[i - 1], order[(seed >> 8) % i]);
  }
  CryptoReassembler r;
  for (std::size_t i : order) ASSERT_TRUE(r.add(i, Bytes(hello_).subspan(i, 1)).ok());
  EXPECT_TRUE(holds(r, hello_));
  EXPECT_FALSE(r.has_gaps());
}

TEST_F(CryptoReassembly, ConflictingOverlapIsBadValueAndChangesNothing) {
  CryptoReassembler r;
  add_all(r, hello_, {{0, 100}});
  ByteVector forged(hello_.begin() + 50, hello_.begin() + 150);
  forged[10] ^= 0xff;  // stream byte 60, already received
  auto s = r.add(50, forged);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), Error::bad_value);
  EXPECT_EQ(r.contiguous_length(), 100u);
  EXPECT_EQ(r.end_offset(), 100u);
  add_all(r, hello_, {{50, 100}});
  EXPECT_EQ(r.contiguous_length(), 150u);
}

TEST_F(CryptoReassembly, OverCapIsLimitExceededNotGrowth) {
  CryptoReassembler r(1024);
  const ByteVector data(10, 0x41);
  EXPECT_TRUE(r.add(1014, data).ok());
  auto s = r.add(1015, data);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), Error::limit_exceeded);
  s = r.add(std::uint64_t{1} << 61, data);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), Error::limit_exceeded);
  EXPECT_EQ(r.end_offset(), 1024u);
  EXPECT_TRUE(r.add(5000, {}).ok());  // empty: nothing to store
}

TEST_F(CryptoReassembly, DefaultCapHoldsABigHelloButNotAHugeOne) {
  CryptoReassembler r;
  EXPECT_EQ(r.max_bytes(), kDefaultCryptoStreamLimit);
  const ByteVector huge(kDefaultCryptoStreamLimit + 1, 0x01);
  EXPECT_EQ(r.add(0, huge).error(), Error::limit_exceeded);
  EXPECT_TRUE(r.add(0, Bytes(huge).first(kDefaultCryptoStreamLimit)).ok());
  EXPECT_EQ(r.contiguous_length(), kDefaultCryptoStreamLimit);
}

TEST_F(CryptoReassembly, ResetForgetsData) {
  CryptoReassembler r;
  add_all(r, hello_, {{10, 10}, {0, 5}});
  r.reset();
  EXPECT_EQ(r.end_offset(), 0u);
  EXPECT_EQ(r.contiguous_length(), 0u);
  ByteVector other(20, 0x77);
  EXPECT_TRUE(r.add(0, other).ok());  // no conflict with forgotten bytes
  EXPECT_EQ(r.contiguous_length(), 20u);
}

// The whole path: two Initial payloads, CRYPTO frames split and reordered inside each,
// the second packet arriving first; the SNI appears only when the prefix is complete.
TEST_F(CryptoReassembly, ClientHelloAcrossTwoInitialPackets) {
  const Bytes h(hello_);
  ByteVector first = test::crypto_frame(600, h.subspan(600, 500));
  const ByteVector head = test::crypto_frame(0, h.subspan(0, 600));
  first.insert(first.end(), head.begin(), head.end());
  first.resize(first.size() + 40, 0x00);
  const ByteVector second = test::crypto_frame(1100, h.subspan(1100));

  CryptoReassembler r;
  for (const ByteVector* packet : std::vector<const ByteVector*>{&second, &first}) {
    auto frames = parse_initial_frames(*packet);
    ASSERT_TRUE(frames.ok());
    for (const CryptoFragment& f : frames->crypto) ASSERT_TRUE(r.add(f.offset, f.data).ok());
    if (packet == &second) {
      EXPECT_EQ(parse_client_hello(r.contiguous()).error(), Error::incomplete);
    }
  }
  auto hello = parse_client_hello(r.contiguous());
  ASSERT_TRUE(hello.ok()) << to_string(hello.error());
  EXPECT_EQ(hello->server_name(), "split.example.com");
}

TEST_F(CryptoReassembly, Rfc9001HelloInThreeFragments) {
  const ByteVector rfc = test::rfc9001_client_hello();
  for (const auto& pieces : std::vector<std::vector<Piece>>{
           {{0, 80}, {80, 80}, {160, 81}}, {{160, 81}, {0, 80}, {80, 80}}, {{80, 161}, {0, 81}}}) {
    CryptoReassembler r;
    for (const Piece& p : pieces) {
      EXPECT_FALSE(parse_client_hello(r.contiguous()).ok());
      add_all(r, rfc, {p});
    }
    auto hello = parse_client_hello(r.contiguous());
    ASSERT_TRUE(hello.ok());
    EXPECT_EQ(hello->server_name(), "example.com");
  }
}

}  // namespace
}  // namespace quicstep::common
