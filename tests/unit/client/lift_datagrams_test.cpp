#include "client/kernel/lift_datagrams.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace quicstep::client::kernel {
namespace {

TEST(LiftPayload, StartsLikeTheClientsShortHeaderThenRandom) {
  std::vector<std::uint8_t> packet(60);
  for (std::size_t i = 0; i < packet.size(); ++i) packet[i] = static_cast<std::uint8_t>(i);
  packet[0] = 0x43;  // a short header: first bit clear
  std::mt19937_64 rng(7);
  const auto out = lift_payload(packet, kLiftDatagramSize, rng);
  ASSERT_EQ(out.size(), kLiftDatagramSize);
  EXPECT_EQ(std::vector<std::uint8_t>(out.begin(), out.begin() + kLiftHeaderBytes),
            std::vector<std::uint8_t>(packet.begin(), packet.begin() + kLiftHeaderBytes));
  // The rest is not the packet's (its decryption must fail): not a copy, not all zero.
  EXPECT_NE(std::vector<std::uint8_t>(out.begin() + kLiftHeaderBytes, out.begin() + 60),
            std::vector<std::uint8_t>(packet.begin() + kLiftHeaderBytes, packet.end()));
  std::size_t zeros = 0;
  for (std::size_t i = kLiftHeaderBytes; i < out.size(); ++i) zeros += out[i] == 0;
  EXPECT_LT(zeros, 30u);
}

TEST(LiftPayload, AShortPacketIsKeptWhole) {
  const std::vector<std::uint8_t> packet{0x40, 1, 2, 3, 4, 5, 6, 7, 8};
  std::mt19937_64 rng(1);
  const auto out = lift_payload(packet, 100, rng);
  ASSERT_EQ(out.size(), 100u);
  EXPECT_EQ(std::vector<std::uint8_t>(out.begin(), out.begin() + 9), packet);
}

TEST(LiftPayload, NothingForALongHeaderOrTooLittle) {
  std::mt19937_64 rng(1);
  EXPECT_TRUE(lift_payload(std::vector<std::uint8_t>{0xc0, 0, 0, 0, 1, 8}, 1200, rng).empty());
  EXPECT_TRUE(lift_payload(std::vector<std::uint8_t>{0x40}, 1200, rng).empty());
  EXPECT_TRUE(lift_payload(std::vector<std::uint8_t>{}, 1200, rng).empty());
}

}  // namespace
}  // namespace quicstep::client::kernel
