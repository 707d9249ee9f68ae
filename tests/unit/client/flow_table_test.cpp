// FlowTable: the fast hash, LRU with touch granularity, idle expiry.
#include "client/core/flow_table.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <unordered_set>

namespace quicstep::client::core {
namespace {

using namespace std::chrono_literals;

FlowKey key(std::uint16_t port, std::uint8_t last = 1, bool v6 = false) {
  FlowKey k;
  k.client = v6 ? common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 2})
                : common::IpAddress::v4({198, 18, 0, 2});
  k.server = v6 ? common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, last})
                : common::IpAddress::v4({198, 18, 1, last});
  k.client_port = port;
  k.server_port = 443;
  k.protocol = 17;
  return k;
}

Timestamp at(Duration d) { return Timestamp{0} + d; }

TEST(FlowTable, HashSpreadsPortsAndFamilies) {
  FlowKeyFastHash h;
  std::unordered_set<std::uint64_t> buckets;
  for (std::uint16_t port = 0; port < 4096; ++port) buckets.insert(h(key(port)) & 8191);
  EXPECT_GT(buckets.size(), 3000u);  // 4096 keys into 8192 buckets: ~3300 distinct expected
  EXPECT_NE(h(key(1, 1, false)), h(key(1, 1, true)));
  EXPECT_NE(FlowKeyFastHash{1}(key(1)), FlowKeyFastHash{2}(key(1)));
}

TEST(FlowTable, InsertFindAndCapacity) {
  FlowTable t(2, 30s);
  const auto a = t.insert(key(1), at(0s));
  EXPECT_EQ(t.find(key(1)), a);
  EXPECT_EQ(t.entry(a).first_seen, at(0s));
  (void)t.insert(key(2), at(1s));
  EXPECT_TRUE(t.full());
  EXPECT_EQ(t.insert(key(3), at(2s)), FlowTable::npos);
  EXPECT_EQ(t.oldest(), a);
  t.touch(a, at(2s));
  EXPECT_EQ(t.key(t.oldest()), key(2));
  t.erase(t.oldest());
  EXPECT_NE(t.insert(key(3), at(2s)), FlowTable::npos);
}

TEST(FlowTable, TouchWithinGranularityKeepsOrderButNotLastSeen) {
  FlowTable t(4, 30s);
  const auto a = t.insert(key(1), at(0ms));
  (void)t.insert(key(2), at(10ms));
  t.touch(a, at(50ms));  // within 100 ms of its link: stays oldest
  EXPECT_EQ(t.oldest(), a);
  EXPECT_EQ(t.entry(a).last_seen, at(50ms));
  t.touch(a, at(100ms));
  EXPECT_EQ(t.key(t.oldest()), key(2));
}

TEST(FlowTable, IdleExpiryUsesTheRealLastSeen) {
  FlowTable t(4, 30s);
  const auto a = t.insert(key(1), at(0ms));
  (void)t.insert(key(2), at(10ms));
  t.touch(a, at(60ms));  // not relinked
  EXPECT_EQ(t.next_idle_expiry(), at(30s));
  EXPECT_EQ(t.find_idle(at(30s)), FlowTable::npos);  // a was seen at 60 ms: relinked instead
  const auto idle = t.find_idle(at(30010ms));
  ASSERT_NE(idle, FlowTable::npos);
  EXPECT_EQ(t.key(idle), key(2));
  t.erase(idle);
  EXPECT_EQ(t.find_idle(at(30059ms)), FlowTable::npos);
  EXPECT_EQ(t.find_idle(at(30060ms)), a);
}

TEST(FlowTable, StateNames) {
  EXPECT_EQ(to_string(FlowState::native_pending), "native_pending");
  EXPECT_EQ(to_string(FlowState::failed), "failed");
}

}  // namespace
}  // namespace quicstep::client::core
