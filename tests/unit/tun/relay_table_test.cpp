// The relay table: one relay per flow, stable ids, LRU order, idle expiry, bounded.
#include "client/tun/relay_table.hpp"

#include <gtest/gtest.h>

#include "common/ip_packet.hpp"
#include "unit/client/client_packets.hpp"

namespace quicstep::client::tun {
namespace {

using namespace core::testing;  // NOLINT: the test packets
using namespace std::chrono_literals;

Timestamp at(Duration d) { return Timestamp{0} + d; }
FlowKey flow(std::uint16_t cport) {
  return FlowKey::from_client(*common::parse_ip_packet(out4(cport, short_header())));
}

TEST(RelayTable, AddFindRemove) {
  RelayTable t(4, 10s);
  EXPECT_EQ(t.find(flow(1)), kNoRelay);
  const RelayId a = t.add(flow(1), at(0s));
  const RelayId b = t.add(flow(2), at(1s));
  EXPECT_NE(a, b);
  EXPECT_EQ(t.find(flow(1)), a);
  EXPECT_EQ(t.flow(b), flow(2));
  EXPECT_TRUE(t.live(a));
  EXPECT_FALSE(t.live(kNoRelay));
  EXPECT_EQ(t.relay(b).opened, at(1s));
  t.remove(a);
  EXPECT_FALSE(t.live(a));
  EXPECT_EQ(t.find(flow(1)), kNoRelay);
  EXPECT_EQ(t.size(), 1u);
}

TEST(RelayTable, IdleExpiryFollowsLastUse) {
  RelayTable t(4, 10s);
  EXPECT_EQ(t.next_idle_expiry(), Timestamp::never());
  const RelayId a = t.add(flow(1), at(0s));
  const RelayId b = t.add(flow(2), at(2s));
  EXPECT_EQ(t.oldest(), a);
  EXPECT_EQ(t.next_idle_expiry(), at(10s));
  t.used(a, at(5s));
  EXPECT_EQ(t.oldest(), b);
  EXPECT_EQ(t.next_idle_expiry(), at(12s));
  EXPECT_EQ(t.find_idle(at(11s)), kNoRelay);
  EXPECT_EQ(t.find_idle(at(12s)), b);
  t.remove(b);
  EXPECT_EQ(t.find_idle(at(14s)), kNoRelay);
  EXPECT_EQ(t.find_idle(at(15s)), a);
}

TEST(RelayTable, BoundedByCapacity) {
  RelayTable t(2, 10s);
  t.add(flow(1), at(0s));
  t.add(flow(2), at(0s));
  EXPECT_TRUE(t.full());
  const RelayId old = t.oldest();
  EXPECT_EQ(t.flow(old), flow(1));
  t.remove(old);
  const RelayId c = t.add(flow(3), at(1s));
  EXPECT_EQ(c, old);  // the id is reused
  EXPECT_EQ(t.find(flow(3)), c);
  EXPECT_EQ(t.size(), 2u);
}

}  // namespace
}  // namespace quicstep::client::tun
