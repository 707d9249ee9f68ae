// Native packets held for the native switch: released in arrival order when due, bounded,
// a relay's packets forgotten with it.
#include "client/tun/held_packets.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace quicstep::client::tun {
namespace {

using Released = std::vector<std::pair<RelayId, std::vector<std::uint8_t>>>;

Timestamp at(int ms) { return Timestamp{0} + std::chrono::milliseconds(ms); }
std::vector<std::uint8_t> bytes(std::uint8_t v, std::size_t n = 3) { return {std::vector<std::uint8_t>(n, v)}; }

Released release(HeldPackets& h, Timestamp now) {
  Released out;
  h.release_due(now, [&](RelayId id, common::Bytes b) { out.emplace_back(id, std::vector<std::uint8_t>(b.begin(), b.end())); });
  return out;
}

TEST(HeldPackets, ReleasesDuePacketsInArrivalOrder) {
  HeldPackets h(8, 100);
  EXPECT_EQ(h.next_release(), Timestamp::never());
  ASSERT_TRUE(h.hold(1, bytes(1), at(20)));
  ASSERT_TRUE(h.hold(2, bytes(2), at(10)));
  ASSERT_TRUE(h.hold(1, bytes(3), at(20)));
  ASSERT_TRUE(h.hold(2, bytes(4), at(10)));
  EXPECT_TRUE(h.holds(1));
  EXPECT_EQ(h.next_release(), at(10));
  EXPECT_TRUE(release(h, at(9)).empty());
  EXPECT_EQ(release(h, at(10)), (Released{{2, bytes(2)}, {2, bytes(4)}}));
  EXPECT_FALSE(h.holds(2));
  EXPECT_EQ(h.next_release(), at(20));
  EXPECT_EQ(release(h, at(30)), (Released{{1, bytes(1)}, {1, bytes(3)}}));
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.next_release(), Timestamp::never());
}

TEST(HeldPackets, BoundedAndRefusesOversizedPayloads) {
  HeldPackets h(2, 4);
  EXPECT_FALSE(h.hold(1, bytes(9, 5), at(1)));
  EXPECT_TRUE(h.hold(1, bytes(9, 4), at(1)));
  EXPECT_TRUE(h.hold(1, {}, at(1)));
  EXPECT_FALSE(h.hold(1, bytes(9, 1), at(1)));
  EXPECT_EQ(release(h, at(1)).size(), 2u);
  // Slots come back: the store is full again after two more.
  EXPECT_TRUE(h.hold(3, bytes(7), at(2)));
  EXPECT_TRUE(h.hold(3, bytes(8), at(2)));
  EXPECT_FALSE(h.hold(3, bytes(9), at(2)));
  EXPECT_EQ(release(h, at(2)), (Released{{3, bytes(7)}, {3, bytes(8)}}));
}

TEST(HeldPackets, DropRelayForgetsItsPackets) {
  HeldPackets h(4, 16);
  ASSERT_TRUE(h.hold(1, bytes(1), at(5)));
  ASSERT_TRUE(h.hold(2, bytes(2), at(9)));
  ASSERT_TRUE(h.hold(1, bytes(3), at(5)));
  EXPECT_EQ(h.drop_relay(1), 2u);
  EXPECT_EQ(h.drop_relay(1), 0u);
  EXPECT_EQ(h.next_release(), at(9));
  EXPECT_EQ(release(h, at(100)), (Released{{2, bytes(2)}}));
}

}  // namespace
}  // namespace quicstep::client::tun
