// DestinationCache: port-specific and address-wide entries, expiry, eviction; the preload
// format with bad lines reported by number and skipped.
#include "client/core/destination_cache.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>

namespace quicstep::client::core {
namespace {

using namespace std::chrono_literals;

Timestamp at(Duration d) { return Timestamp{0} + d; }
IpAddress v4(std::uint8_t last) { return IpAddress::v4({198, 18, 1, last}); }

TEST(DestinationCache, PortAndWildcard) {
  DestinationCache c(8, 1h);
  c.add({v4(1), 443}, NonMigratingReason::migration_failed, at(0s));
  c.add({v4(2), 0}, NonMigratingReason::preloaded, at(0s));
  EXPECT_TRUE(c.contains(v4(1), 443, at(1s)));
  EXPECT_FALSE(c.contains(v4(1), 8443, at(1s)));
  EXPECT_TRUE(c.contains(v4(2), 443, at(1s)));
  EXPECT_TRUE(c.contains(v4(2), 8443, at(1s)));
  EXPECT_FALSE(c.contains(v4(3), 443, at(1s)));
}

// Watchdog failures: first_penalty, doubled per repeat remembered within the TTL, capped at
// the TTL; a preloaded destination gets the TTL at once and is not shortened by a penalty.
TEST(DestinationCache, PenaltyEscalatesAndIsBounded) {
  DestinationCache c(8, 24h, 0, 10min);
  const Destination d{v4(1), 443};
  EXPECT_EQ(c.add(d, NonMigratingReason::migration_failed, at(0s)), 10min);
  EXPECT_TRUE(c.contains(v4(1), 443, at(10min - 1ns)));
  EXPECT_FALSE(c.contains(v4(1), 443, at(10min)));
  EXPECT_EQ(c.size(), 1u);  // served its penalty; the strike is remembered
  EXPECT_EQ(c.add(d, NonMigratingReason::migration_failed, at(1h)), 20min);
  EXPECT_TRUE(c.contains(v4(1), 443, at(1h + 20min - 1ns)));
  EXPECT_FALSE(c.contains(v4(1), 443, at(1h + 20min)));
  Duration last{};
  for (int i = 0; i < 20; ++i) last = c.add(d, NonMigratingReason::migration_failed, at(2h));
  EXPECT_EQ(last, 24h);
  EXPECT_TRUE(c.contains(v4(1), 443, at(2h + 24h - 1ns)));
  EXPECT_FALSE(c.contains(v4(1), 443, at(2h + 24h)));
  EXPECT_EQ(c.size(), 0u);  // forgotten a TTL after its last failure
  // Forgotten: the next failure starts again at the first penalty.
  EXPECT_EQ(c.add(d, NonMigratingReason::migration_failed, at(30h)), 10min);
  // Preloaded: the TTL, and a later watchdog penalty does not shorten it.
  const Destination e{v4(2), 0};
  EXPECT_EQ(c.add(e, NonMigratingReason::preloaded, at(0s)), 24h);
  EXPECT_EQ(c.add(e, NonMigratingReason::migration_failed, at(1s)), 10min);
  EXPECT_TRUE(c.contains(v4(2), 443, at(23h)));
  // No first penalty (or one above the TTL): the TTL.
  DestinationCache flat(8, 1h);
  EXPECT_EQ(flat.add(d, NonMigratingReason::migration_failed, at(0s)), 1h);
}

TEST(DestinationCache, Expiry) {
  DestinationCache c(8, 10min);
  c.add({v4(1), 443}, NonMigratingReason::migration_failed, at(0s));
  EXPECT_TRUE(c.contains(v4(1), 443, at(10min - 1ns)));
  EXPECT_FALSE(c.contains(v4(1), 443, at(10min)));
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.expirations(), 1u);
  c.add({v4(1), 443}, NonMigratingReason::migration_failed, at(1h));  // re-learnt
  EXPECT_TRUE(c.contains(v4(1), 443, at(1h + 1s)));
}

TEST(DestinationCache, EvictsLeastRecentlyUsed) {
  DestinationCache c(3, 1h);
  for (std::uint8_t i = 1; i <= 3; ++i) {
    c.add({v4(i), 443}, NonMigratingReason::migration_failed, at(0s));
  }
  EXPECT_TRUE(c.contains(v4(1), 443, at(1s)));  // 1 is now the most recent
  c.add({v4(4), 443}, NonMigratingReason::migration_failed, at(2s));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_TRUE(c.contains(v4(1), 443, at(3s)));
  EXPECT_FALSE(c.contains(v4(2), 443, at(3s)));
  c.clear();
  EXPECT_EQ(c.size(), 0u);
}

TEST(DestinationList, ParsesGoodLinesAndReportsBadOnes) {
  const auto list = parse_destination_list(
      "# prober results\n"
      "198.18.1.10,443 no_migration\n"
      "\n"
      "2001:db8::10 ignores_new_address  # trailing comment\n"
      "198.18.1.300 no_migration\n"
      "198.18.1.11,0 no_migration\n"
      "198.18.1.12,443x no_migration\n"
      "198.18.1.13\n"
      "198.18.1.14 two words\n"
      "  2001:db8::11,8443\tno_migration\r\n");
  ASSERT_EQ(list.destinations.size(), 3u);
  EXPECT_EQ(list.destinations[0].port, 443);
  EXPECT_EQ(list.destinations[1].address.family, common::IpFamily::v6);
  EXPECT_EQ(list.destinations[1].port, 0);
  EXPECT_EQ(list.destinations[2].port, 8443);
  ASSERT_EQ(list.errors.size(), 5u);
  EXPECT_EQ(list.errors[0].line, 5u);
  EXPECT_NE(list.errors[0].message.find("'198.18.1.300'"), std::string::npos);
  EXPECT_EQ(list.errors[1].line, 6u);
  EXPECT_NE(list.errors[1].message.find("'0'"), std::string::npos);
  EXPECT_EQ(list.errors[2].line, 7u);
  EXPECT_NE(list.errors[2].message.find("'443x'"), std::string::npos);
  EXPECT_EQ(list.errors[3].line, 8u);
  EXPECT_EQ(list.errors[4].line, 9u);
}

TEST(DestinationList, BoundsTheErrorList) {
  std::string text;
  for (int i = 0; i < 150; ++i) text += "bad\n";
  const auto list = parse_destination_list(text);
  EXPECT_EQ(list.errors.size(), kMaxListErrors);
  EXPECT_EQ(list.more_errors, 50u);
}

TEST(DestinationList, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/qs_destinations.txt";
  std::ofstream(path) << "198.18.1.10 no_migration\n";
  EXPECT_EQ(read_destination_file(path).destinations.size(), 1u);
  std::remove(path.c_str());
  const auto missing = read_destination_file(path);
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].line, 0u);
}

}  // namespace
}  // namespace quicstep::client::core
