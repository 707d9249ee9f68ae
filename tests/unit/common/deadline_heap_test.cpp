// The deadline heaps (common/deadline_heap.hpp) against reference containers and scans: the
// dense one the classifier's watchdog uses, the keyed one of the server and the tools.
#include "common/deadline_heap.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

namespace quicstep::common {
namespace {

Timestamp at(std::uint64_t ns) { return Timestamp::from_unsigned_ns(ns); }

TEST(DeadlineHeap, MatchesAReferenceUnderRandomOperations) {
  constexpr std::uint32_t kCap = 64;
  DenseDeadlineHeap heap(kCap);
  std::map<std::uint32_t, std::int64_t> ref;
  std::mt19937 rng(9);
  for (int i = 0; i < 100'000; ++i) {
    const std::uint32_t id = rng() % kCap;
    switch (rng() % 3) {
      case 0:
        heap.erase(id);
        ref.erase(id);
        break;
      case 1: {
        const std::int64_t d = rng() % 1000;
        heap.set(id, Timestamp{d});
        ref[id] = d;
        break;
      }
      default:
        if (!heap.empty()) {
          const auto top = heap.top();
          ASSERT_EQ(ref.at(top), heap.next().ns);
          heap.erase(top);
          ref.erase(top);
        }
    }
    ASSERT_EQ(heap.size(), ref.size());
    std::int64_t min = std::numeric_limits<std::int64_t>::max();
    for (const auto& [k, v] : ref) min = std::min(min, v);
    ASSERT_EQ(heap.next().ns, min);
    ASSERT_EQ(heap.contains(id), ref.count(id) == 1);
  }
}

TEST(DeadlineHeap, DenseTiesComeOutInKeyOrder) {
  DenseDeadlineHeap heap(8);
  heap.set(5, Timestamp{10});
  heap.set(1, Timestamp{10});
  heap.set(3, Timestamp{5});
  heap.set(7, Timestamp::never());  // no deadline: nothing stored
  EXPECT_EQ(heap.size(), 3u);
  EXPECT_FALSE(heap.contains(7));
  EXPECT_EQ(heap.take_due(Timestamp{10}), (std::vector<std::uint32_t>{3, 1, 5}));
  EXPECT_TRUE(heap.empty());
}

TEST(TimerQueue, EarliestFirstAndReschedule) {
  DeadlineHeap<std::uint64_t> q;
  EXPECT_EQ(q.next(), Timestamp::never());
  q.set(1, at(300));
  q.set(2, at(100));
  q.set(3, at(200));
  EXPECT_EQ(q.next(), at(100));
  q.set(2, at(400));  // moved later: the old entry at 100 is stale
  EXPECT_EQ(q.next(), at(200));
  EXPECT_EQ(q.take_due(at(250)), (std::vector<std::uint64_t>{3}));
  q.erase(1);
  EXPECT_EQ(q.next(), at(400));
  EXPECT_TRUE(q.take_due(at(399)).empty());
  EXPECT_EQ(q.take_due(at(400)), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(q.next(), Timestamp::never());
  EXPECT_EQ(q.size(), 0u);
}

TEST(TimerQueue, MovedEarlier) {
  DeadlineHeap<std::uint64_t> q;
  q.set(7, at(1000));
  q.set(7, at(10));
  EXPECT_EQ(q.take_due(at(10)), (std::vector<std::uint64_t>{7}));
  EXPECT_TRUE(q.take_due(at(2000)).empty());  // the superseded entry never fires
}

TEST(TimerQueue, HeapStaysBounded) {
  DeadlineHeap<std::uint64_t> q;
  for (std::uint64_t round = 0; round < 10000; ++round) {
    for (std::uint64_t id = 0; id < 10; ++id) q.set(id, at(1'000'000 + round));
  }
  EXPECT_EQ(q.size(), 10u);
  EXPECT_LE(q.size(), 8 * 10u + 64);
  EXPECT_EQ(q.take_due(at(UINT64_MAX - 1)).size(), 10u);
}

TEST(TimerQueue, EmptyHasNoDeadline) {
  DeadlineHeap<int> q;
  EXPECT_EQ(q.next(), Timestamp::never());
  EXPECT_TRUE(q.take_due(at(1000)).empty());
}

TEST(TimerQueue, MovingADeadlineReplacesIt) {
  DeadlineHeap<int> q;
  q.set(1, at(50));
  q.set(2, at(30));
  q.set(1, at(10));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.next(), at(10));
  q.set(1, Timestamp::never());  // removes
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.next(), at(30));
}

TEST(TimerQueue, TakesOnlyDueKeysEarliestFirst) {
  DeadlineHeap<int> q;
  q.set(1, at(40));
  q.set(2, at(20));
  q.set(3, at(20));
  q.set(4, at(41));
  EXPECT_EQ(q.take_due(at(40)), (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(q.next(), at(41));
  q.erase(4);
  q.erase(4);  // twice: no-op
  EXPECT_EQ(q.size(), 0u);
}

TEST(TimerQueue, AgreesWithAScanOverRandomOperations) {
  std::mt19937_64 rng(7);
  DeadlineHeap<int> q;
  std::map<int, std::uint64_t> model;
  for (int i = 0; i < 20000; ++i) {
    const int key = static_cast<int>(rng() % 200);
    const std::uint64_t t = rng() % 100000;
    if (rng() % 5 == 0) {
      q.erase(key);
      model.erase(key);
    } else {
      q.set(key, at(t));
      model[key] = t;
    }
    std::uint64_t min = UINT64_MAX;
    for (const auto& [k, v] : model) min = std::min(min, v);
    ASSERT_EQ(q.next(), at(min));
  }
  const auto due = q.take_due(at(50000));
  for (int k : due) {
    ASSERT_LE(model.at(k), 50000u);
    model.erase(k);
  }
  for (const auto& [k, v] : model) EXPECT_GT(v, 50000u);
}

}  // namespace
}  // namespace quicstep::common
