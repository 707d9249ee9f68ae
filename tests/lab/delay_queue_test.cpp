// The delay line's core: order, due times, batching, loss, bound, spec parsing.
#include "lab/delay_queue.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace quicstep::lab {
namespace {

using namespace std::chrono_literals;

Timestamp at(Duration d) { return Timestamp{} + d; }

TEST(DelayQueue, ReleasesInOrderAfterTheDelay) {
  DelayQueue dq({{1, 10ms, 0.0}}, 100);
  EXPECT_EQ(dq.admit(1, 7, at(0ms), 0.5), Admission::hold);
  EXPECT_EQ(dq.admit(1, 8, at(2ms), 0.5), Admission::hold);
  ASSERT_TRUE(dq.next_expiry());
  EXPECT_EQ(*dq.next_expiry(), at(10ms));
  EXPECT_TRUE(dq.release_due(at(9ms)).empty());
  auto r = dq.release_due(at(10ms));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].last_id, 7u);
  EXPECT_EQ(r[0].count, 1u);
  EXPECT_EQ(*dq.next_expiry(), at(12ms));
  r = dq.release_due(at(50ms));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].last_id, 8u);
  EXPECT_FALSE(dq.next_expiry());
}

TEST(DelayQueue, BatchesEveryDuePacketOfAQueueIntoOneRelease) {
  DelayQueue dq({{1, 1ms, 0.0}, {2, 5ms, 0.0}}, 100);
  for (std::uint32_t id = 1; id <= 5; ++id) dq.admit(1, id, at(0ms), 0.9);
  dq.admit(2, 1, at(0ms), 0.9);
  auto r = dq.release_due(at(1ms));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].queue, 1);
  EXPECT_EQ(r[0].last_id, 5u);
  EXPECT_EQ(r[0].count, 5u);
  EXPECT_EQ(dq.stats(0).batches, 1u);
  EXPECT_EQ(*dq.next_expiry(), at(5ms));
}

TEST(DelayQueue, LossDropsWhenTheCoinIsBelowTheProbability) {
  DelayQueue dq({{3, 1ms, 0.25}}, 100);
  EXPECT_EQ(dq.admit(3, 1, at(0ms), 0.1), Admission::drop_lost);
  EXPECT_EQ(dq.admit(3, 2, at(0ms), 0.25), Admission::hold);
  EXPECT_EQ(dq.stats(0).lost, 1u);
  EXPECT_EQ(dq.stats(0).held, 1u);
}

TEST(DelayQueue, IsBounded) {
  DelayQueue dq({{1, 1s, 0.0}}, 2);
  EXPECT_EQ(dq.admit(1, 1, at(0ms), 0.5), Admission::hold);
  EXPECT_EQ(dq.admit(1, 2, at(0ms), 0.5), Admission::hold);
  EXPECT_EQ(dq.admit(1, 3, at(0ms), 0.5), Admission::drop_full);
  EXPECT_EQ(dq.stats(0).overflow, 1u);
  EXPECT_EQ(dq.stats(0).max_depth, 2u);
}

TEST(ParseQueueSpec, AcceptsUnitsAndLoss) {
  auto p = parse_queue_spec("3:20ms");
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->queue, 3);
  EXPECT_EQ(p.config->delay, 20ms);
  p = parse_queue_spec("65535:1.5us:0.01");
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->delay, Duration(1500));
  EXPECT_DOUBLE_EQ(p.config->loss, 0.01);
  p = parse_queue_spec("0:2s");
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->delay, 2s);
}

TEST(ParseQueueSpec, RefusesAndQuotesBadSpecs) {
  for (const char* bad : {"", "3", "3:", "3:20", "x:20ms", "70000:1ms", "3:20ms:", "3:20ms:1",
                          "3:20ms:-0.1", "3:-1ms", "3:20msx", "3:20 ms", "3:61s", "3:nanms"}) {
    auto p = parse_queue_spec(bad);
    EXPECT_FALSE(p.config) << bad;
    EXPECT_NE(p.error.find(std::string("`") + bad + "'"), std::string::npos) << p.error;
  }
}

}  // namespace
}  // namespace quicstep::lab
