// The wg-quick file as quicstepd splits it: wg-quick's own [Interface] keys out (Address,
// MTU, DNS used; Table and the hooks dropped), comments after values ignored as wg-quick
// ignores them, everything else left for `wg setconf` as written.
#include "client/daemon/wg_quick_file.hpp"

#include <gtest/gtest.h>

namespace quicstep::client::daemon {
namespace {

using Strings = std::vector<std::string>;

TEST(WgQuickFile, SplitsWgQuicksOwnKeysFromWhatWgSetconfTakes) {
  const WgQuickFile f = split_wg_quick(
      "[Interface]\r\n"
      "PrivateKey = cGFzc3dvcmQ=   # a comment wg itself skips\r\n"
      "Address = 10.64.0.2/32,fc00:bbbb::2/128   # the tunnel's\r\n"
      "Address=10.64.0.3/32\r\n"
      "DNS = 10.64.0.1, FC00:BBBB::1 , corp.example, 10.64.0.9 # resolvers and a search domain\r\n"
      "MTU = 1380 # smaller\r\n"
      "Table = off\r\n"
      "PostUp = iptables -A FORWARD -i %i -j ACCEPT\r\n"
      "SaveConfig = true\r\n"
      "\r\n"
      "[Peer]\r\n"
      "PublicKey = a2V5\r\n"
      "AllowedIPs = 0.0.0.0/0, ::/0\r\n"
      "Endpoint = vpn.example:51820\r\n");
  EXPECT_EQ(f.addresses, (Strings{"10.64.0.2/32", "fc00:bbbb::2/128", "10.64.0.3/32"}));
  EXPECT_EQ(f.mtu, "1380");
  EXPECT_EQ(f.dns_v4, (Strings{"10.64.0.1", "10.64.0.9"}));
  EXPECT_EQ(f.dns_v6, (Strings{"fc00:bbbb::1"}));  // canonical text
  EXPECT_EQ(f.wg_text,
            "[Interface]\r\n"
            "PrivateKey = cGFzc3dvcmQ=   # a comment wg itself skips\r\n"
            "\r\n"
            "[Peer]\r\n"
            "PublicKey = a2V5\r\n"
            "AllowedIPs = 0.0.0.0/0, ::/0\r\n"
            "Endpoint = vpn.example:51820\r\n");
}

TEST(WgQuickFile, OnlyInterfaceKeysAndOnlyAsWgQuickSpellsThem) {
  // wg-quick reads its keys in [Interface] only and case-sensitively: anything else is
  // `wg setconf`'s to accept or refuse (with its own message).
  const WgQuickFile f = split_wg_quick(
      "DNS = 10.0.0.1\n"
      "[Interface]\n"
      "dns = 10.0.0.2\n"
      "# DNS = 10.0.0.3\n"
      "[Peer]\n"
      "DNS = 10.0.0.4\n"
      "Address = 10.0.0.5/32\n");
  EXPECT_TRUE(f.dns_v4.empty());
  EXPECT_TRUE(f.addresses.empty());
  EXPECT_EQ(f.wg_text,
            "DNS = 10.0.0.1\n[Interface]\ndns = 10.0.0.2\n# DNS = 10.0.0.3\n[Peer]\n"
            "DNS = 10.0.0.4\nAddress = 10.0.0.5/32\n");
}

TEST(WgQuickFile, NoDnsLineNoResolvers) {
  const WgQuickFile f = split_wg_quick("[Interface]\nAddress = 10.1.0.2/24\nDNS =\n");
  EXPECT_EQ(f.addresses, (Strings{"10.1.0.2/24"}));
  EXPECT_TRUE(f.dns_v4.empty());
  EXPECT_TRUE(f.dns_v6.empty());
  EXPECT_TRUE(f.mtu.empty());
}

}  // namespace
}  // namespace quicstep::client::daemon
