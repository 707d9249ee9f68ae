// egress_ip_packet: the IP packet inside an egress copy, after the link-layer header of an
// Ethernet-framed device (with VLAN tags), or the copy itself on a layer-3 device.
#include "client/kernel/link_header.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace quicstep::client::kernel {
namespace {

const std::vector<std::uint8_t> kIp = {0x45, 0, 0, 20, 1, 2, 3, 4};

std::vector<std::uint8_t> frame(std::vector<std::uint16_t> types) {
  std::vector<std::uint8_t> f(12, 0x02);  // two unicast MAC addresses
  for (std::size_t i = 0; i < types.size(); ++i) {
    f.push_back(static_cast<std::uint8_t>(types[i] >> 8));
    f.push_back(static_cast<std::uint8_t>(types[i]));
    if (i + 1 < types.size()) f.insert(f.end(), {0x00, 0x05});  // a tag's TCI
  }
  f.insert(f.end(), kIp.begin(), kIp.end());
  return f;
}

std::vector<std::uint8_t> bytes(std::optional<common::Bytes> b) {
  return b ? std::vector<std::uint8_t>(b->begin(), b->end()) : std::vector<std::uint8_t>{0xff};
}

TEST(EgressIpPacket, LayerThreeDeviceCopyIsThePacket) {
  EXPECT_EQ(bytes(egress_ip_packet(kIp, false)), kIp);
}

TEST(EgressIpPacket, EthernetHeaderAndVlanTagsStripped) {
  EXPECT_EQ(bytes(egress_ip_packet(frame({0x0800}), true)), kIp);
  EXPECT_EQ(bytes(egress_ip_packet(frame({0x86dd}), true)), kIp);
  EXPECT_EQ(bytes(egress_ip_packet(frame({0x8100, 0x0800}), true)), kIp);
  EXPECT_EQ(bytes(egress_ip_packet(frame({0x88a8, 0x8100, 0x86dd}), true)), kIp);
}

TEST(EgressIpPacket, NonIpFramesAndShortCopiesAreNone) {
  EXPECT_FALSE(egress_ip_packet(frame({0x0806}), true));  // ARP
  const std::vector<std::uint8_t> short_copy(13, 0x02);
  EXPECT_FALSE(egress_ip_packet(short_copy, true));
  const std::vector<std::uint8_t> tag_cut = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0x81, 0x00, 0};
  EXPECT_FALSE(egress_ip_packet(tag_cut, true));
}

}  // namespace
}  // namespace quicstep::client::kernel
