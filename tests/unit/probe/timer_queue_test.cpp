#include "measurement/probe/timer_queue.hpp"

#include <gtest/gtest.h>

namespace quicstep::measurement::probe {
namespace {

TEST(TimerQueue, EarliestFirstAndReschedule) {
  TimerQueue q;
  EXPECT_EQ(q.next(), UINT64_MAX);
  q.schedule(1, 300);
  q.schedule(2, 100);
  q.schedule(3, 200);
  EXPECT_EQ(q.next(), 100u);
  q.schedule(2, 400);  // moved later: the old entry at 100 is stale
  EXPECT_EQ(q.next(), 200u);
  EXPECT_EQ(q.pop_due(250), (std::vector<std::uint64_t>{3}));
  q.cancel(1);
  EXPECT_EQ(q.next(), 400u);
  EXPECT_TRUE(q.pop_due(399).empty());
  EXPECT_EQ(q.pop_due(400), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(q.next(), UINT64_MAX);
  EXPECT_EQ(q.live(), 0u);
}

TEST(TimerQueue, MovedEarlier) {
  TimerQueue q;
  q.schedule(7, 1000);
  q.schedule(7, 10);
  EXPECT_EQ(q.pop_due(10), (std::vector<std::uint64_t>{7}));
  EXPECT_TRUE(q.pop_due(2000).empty());  // the superseded entry never fires
}

TEST(TimerQueue, HeapStaysBounded) {
  TimerQueue q;
  for (std::uint64_t round = 0; round < 10000; ++round) {
    for (std::uint64_t id = 0; id < 10; ++id) q.schedule(id, 1'000'000 + round);
  }
  EXPECT_EQ(q.live(), 10u);
  EXPECT_LE(q.heap_size(), 8 * 10u + 64);
  EXPECT_EQ(q.pop_due(UINT64_MAX - 1).size(), 10u);
}

}  // namespace
}  // namespace quicstep::measurement::probe
