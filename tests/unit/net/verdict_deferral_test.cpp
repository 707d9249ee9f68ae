// VerdictDeferral: packets wait until their time, are released in id order, the bound is
// kept, and abandon() forgets them.
#include "net/verdict_deferral.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace quicstep::net {
namespace {

using common::Timestamp;

std::vector<std::uint32_t> ids(const std::vector<PendingVerdict>& v) {
  std::vector<std::uint32_t> out;
  for (const auto& p : v) out.push_back(p.id);
  return out;
}

TEST(VerdictDeferral, ReleasesDuePacketsInIdOrderWithTheirMarks) {
  VerdictDeferral d(8);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.next_release().ns, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(d.oldest_id(), std::nullopt);
  ASSERT_TRUE(d.defer(10, 0x52, Timestamp{500}));  // flow A
  ASSERT_TRUE(d.defer(11, 0x52, Timestamp{300}));  // flow B, moved later with a shorter delay
  ASSERT_TRUE(d.defer(12, 0x52, Timestamp{500}));  // flow A
  ASSERT_TRUE(d.defer(13, std::nullopt, Timestamp{300}));
  EXPECT_EQ(d.next_release(), Timestamp{300});
  EXPECT_EQ(d.oldest_id(), 10u);
  std::vector<PendingVerdict> out;
  d.release_due(Timestamp{299}, &out);
  EXPECT_TRUE(out.empty());
  d.release_due(Timestamp{300}, &out);
  EXPECT_EQ(ids(out), (std::vector<std::uint32_t>{11, 13}));
  EXPECT_EQ(out[0].mark, 0x52u);
  EXPECT_EQ(out[1].mark, std::nullopt);
  EXPECT_EQ(d.oldest_id(), 10u);
  EXPECT_EQ(d.next_release(), Timestamp{500});
  out.clear();
  d.release_due(Timestamp{1000}, &out);
  EXPECT_EQ(ids(out), (std::vector<std::uint32_t>{10, 12}));
  EXPECT_TRUE(d.empty());
}

TEST(VerdictDeferral, RefusesBeyondItsCapacity) {
  VerdictDeferral d(2);
  EXPECT_TRUE(d.defer(1, 0x52, Timestamp{5}));
  EXPECT_TRUE(d.defer(2, 0x52, Timestamp{5}));
  EXPECT_FALSE(d.defer(3, 0x52, Timestamp{5}));
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.abandon(), 2u);
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(d.defer(3, 0x52, Timestamp{5}));
}

}  // namespace
}  // namespace quicstep::net
