// LruTable against reference containers, over random operations.
#include "common/lru_table.hpp"

#include <gtest/gtest.h>

#include <list>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

namespace quicstep::common {
namespace {

// A deliberately weak hash: long probe chains and wrap-around exercise backward shifts.
struct WeakHash {
  std::uint64_t operator()(int k) const { return (std::uint64_t(k % 7) << 32) | (k % 13); }
};

using Table = LruTable<int, int, WeakHash>;

TEST(LruTable, InsertFindEraseAndOrder) {
  Table t(4, WeakHash{});
  EXPECT_EQ(t.find(1), Table::npos);
  const auto a = t.insert(1);
  const auto b = t.insert(2);
  t.value(a) = 10;
  EXPECT_EQ(t.find(1), a);
  EXPECT_EQ(t.value(t.find(1)), 10);
  EXPECT_EQ(t.oldest(), a);
  EXPECT_EQ(t.newest(), b);
  t.touch(a);
  EXPECT_EQ(t.oldest(), b);
  (void)t.insert(3);
  (void)t.insert(4);
  EXPECT_TRUE(t.full());
  EXPECT_EQ(t.insert(5), Table::npos);
  t.erase(t.oldest());
  EXPECT_EQ(t.find(2), Table::npos);
  EXPECT_NE(t.insert(5), Table::npos);
  EXPECT_EQ(t.value(t.find(5)), 0);  // value-initialised, not the erased entry's
}

TEST(LruTable, MatchesAReferenceUnderRandomOperations) {
  constexpr std::size_t kCap = 50;
  Table t(kCap, WeakHash{});
  std::list<int> order;  // newest first
  std::unordered_map<int, int> ref;
  std::mt19937 rng(7);
  for (int i = 0; i < 200'000; ++i) {
    const int k = static_cast<int>(rng() % 120);
    const auto h = t.find(k);
    ASSERT_EQ(h != Table::npos, ref.count(k) == 1) << i;
    const unsigned op = rng() % 3;
    if (h != Table::npos && op == 0) {
      t.erase(h);
      ref.erase(k);
      order.remove(k);
    } else if (h != Table::npos) {
      ASSERT_EQ(t.value(h), ref[k]);
      t.touch(h);
      order.remove(k);
      order.push_front(k);
    } else {
      if (t.full()) {
        ASSERT_EQ(t.key(t.oldest()), order.back());
        ref.erase(order.back());
        t.erase(t.oldest());
        order.pop_back();
      }
      const auto n = t.insert(k);
      t.value(n) = i;
      ref[k] = i;
      order.push_front(k);
    }
    ASSERT_EQ(t.size(), ref.size());
  }
  auto it = order.begin();
  for (auto h = t.newest(); h != Table::npos; h = t.older(h), ++it) ASSERT_EQ(t.key(h), *it);
}

}  // namespace
}  // namespace quicstep::common
