#include "server_testbed/timer_queue.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace quicstep::server_testbed {
namespace {

TEST(TimerQueue, EmptyHasNoDeadline) {
  TimerQueue<int> q;
  EXPECT_EQ(q.next(), TimerQueue<int>::kNever);
  EXPECT_TRUE(q.take_due(1000).empty());
}

TEST(TimerQueue, MovingADeadlineReplacesIt) {
  TimerQueue<int> q;
  q.set(1, 50);
  q.set(2, 30);
  q.set(1, 10);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.next(), 10u);
  q.set(1, TimerQueue<int>::kNever);  // removes
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.next(), 30u);
}

TEST(TimerQueue, TakesOnlyDueKeysEarliestFirst) {
  TimerQueue<int> q;
  q.set(1, 40);
  q.set(2, 20);
  q.set(3, 20);
  q.set(4, 41);
  EXPECT_EQ(q.take_due(40), (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(q.next(), 41u);
  q.erase(4);
  q.erase(4);  // twice: no-op
  EXPECT_EQ(q.size(), 0u);
}

TEST(TimerQueue, AgreesWithAScanOverRandomOperations) {
  std::mt19937_64 rng(7);
  TimerQueue<int> q;
  std::map<int, std::uint64_t> model;
  for (int i = 0; i < 20000; ++i) {
    const int key = static_cast<int>(rng() % 200);
    const std::uint64_t t = rng() % 100000;
    if (rng() % 5 == 0) {
      q.erase(key);
      model.erase(key);
    } else {
      q.set(key, t);
      model[key] = t;
    }
    std::uint64_t min = TimerQueue<int>::kNever;
    for (const auto& [k, v] : model) min = std::min(min, v);
    ASSERT_EQ(q.next(), min);
  }
  const auto due = q.take_due(50000);
  for (int k : due) {
    ASSERT_LE(model.at(k), 50000u);
    model.erase(k);
  }
  for (const auto& [k, v] : model) EXPECT_GT(v, 50000u);
}

}  // namespace
}  // namespace quicstep::server_testbed
