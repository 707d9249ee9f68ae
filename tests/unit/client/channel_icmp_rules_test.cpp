#include "client/kernel/channel_icmp_rules.hpp"

#include <gtest/gtest.h>

#include "support/outcome.hpp"

namespace quicstep::client::kernel {
namespace {

using quicstep::test_support::failure_text;

// The rules themselves need a kernel: quicstepd_lab test_12 sends through the channel to a
// closed port and expects ECONNREFUSED (it times out without them). Here: the inputs.

TEST(ChannelIcmpRules, NoTunnelAddressNothingToDoNoSocketOpened) {
  NftNetlink netlink;
  EXPECT_EQ(failure_text(insert_icmp_error_rules(netlink, "quicstep", "channel_ingress", "", "")),
            "");
  EXPECT_FALSE(netlink.is_open());
}

TEST(ChannelIcmpRules, ABadTunnelAddressIsRefusedBeforeAnyMessage) {
  NftNetlink netlink;
  const std::string v4 = failure_text(
      insert_icmp_error_rules(netlink, "quicstep", "channel_ingress", "198.19.255", ""));
  EXPECT_NE(v4.find("not an IPv4 address: 198.19.255"), std::string::npos) << v4;
  const std::string v6 = failure_text(
      insert_icmp_error_rules(netlink, "quicstep", "channel_ingress", "", "198.19.255.2"));
  EXPECT_NE(v6.find("not an IPv6 address: 198.19.255.2"), std::string::npos) << v6;
  EXPECT_FALSE(netlink.is_open());
}

}  // namespace
}  // namespace quicstep::client::kernel
