// quicstep-gate --tx-next-hop: the MAC address parser.
#include <gtest/gtest.h>

#include "server_testbed/gate/mac_address.hpp"

namespace gate = quicstep::server_testbed::gate;

TEST(MacAddress, ParsesSixOctets) {
  auto mac = gate::parse_mac("02:0a:Bc:d:00:ff");
  ASSERT_TRUE(mac.has_value());
  EXPECT_EQ(*mac, (std::array<std::uint8_t, 6>{0x02, 0x0a, 0xbc, 0x0d, 0x00, 0xff}));
}

TEST(MacAddress, RefusesMalformedAndNonUnicast) {
  for (const char* bad : {"", "02:00:00:00:00", "02:00:00:00:00:00:01", "02:00:00:00:00:0g",
                          "02-00-00-00-00-01", "02:00:00:00:00:001", "02:00:00:00:00:01 ",
                          "00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01"}) {
    EXPECT_FALSE(gate::parse_mac(bad).has_value()) << bad;
  }
}
