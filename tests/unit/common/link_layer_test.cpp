#include "common/link_layer.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace quicstep::common {
namespace {

const std::vector<std::uint8_t> kIp{0x45, 0x00, 0x00, 0x14};

std::vector<std::uint8_t> ethernet_frame(std::vector<std::uint16_t> types) {
  std::vector<std::uint8_t> f(12, 0xaa);
  for (std::size_t i = 0; i < types.size(); ++i) {
    f.push_back(types[i] >> 8);
    f.push_back(types[i] & 0xff);
    if (i + 1 < types.size()) f.insert(f.end(), {0x00, 0x05});  // VLAN TCI
  }
  f.insert(f.end(), kIp.begin(), kIp.end());
  return f;
}

TEST(LinkLayer, EthernetCarriesIpv4AndIpv6) {
  for (std::uint16_t t : {0x0800, 0x86dd}) {
    auto f = ethernet_frame({t});
    auto ip = ip_datagram_of_frame(LinkType::ethernet, f);
    ASSERT_TRUE(ip.ok());
    EXPECT_EQ(ip->size(), kIp.size());
    EXPECT_EQ((*ip)[0], 0x45);
  }
}

TEST(LinkLayer, EthernetSkipsVlanTags) {
  auto f = ethernet_frame({0x8100, 0x0800});
  EXPECT_TRUE(ip_datagram_of_frame(LinkType::ethernet, f).ok());
  auto q = ethernet_frame({0x88a8, 0x8100, 0x86dd});
  EXPECT_TRUE(ip_datagram_of_frame(LinkType::ethernet, q).ok());
  auto too_many = ethernet_frame({0x8100, 0x8100, 0x8100, 0x0800});
  EXPECT_EQ(ip_datagram_of_frame(LinkType::ethernet, too_many).error(), Error::unsupported);
}

TEST(LinkLayer, EthernetRejectsArp) {
  auto f = ethernet_frame({0x0806});
  EXPECT_EQ(ip_datagram_of_frame(LinkType::ethernet, f).error(), Error::unsupported);
}

TEST(LinkLayer, LinuxCookedV1AndV2) {
  std::vector<std::uint8_t> sll(14, 0);
  sll.insert(sll.end(), {0x86, 0xdd});
  sll.insert(sll.end(), kIp.begin(), kIp.end());
  EXPECT_TRUE(ip_datagram_of_frame(LinkType::linux_sll, sll).ok());

  std::vector<std::uint8_t> sll2{0x08, 0x00};
  sll2.resize(20, 0);
  sll2.insert(sll2.end(), kIp.begin(), kIp.end());
  auto ip = ip_datagram_of_frame(LinkType::linux_sll2, sll2);
  ASSERT_TRUE(ip.ok());
  EXPECT_EQ(ip->size(), kIp.size());
}

TEST(LinkLayer, NullLoopbackEitherByteOrder) {
  std::vector<std::uint8_t> le{2, 0, 0, 0, 0x45};
  std::vector<std::uint8_t> be{0, 0, 0, 30, 0x60};
  std::vector<std::uint8_t> other{0, 0, 0, 7, 0x45};
  EXPECT_TRUE(ip_datagram_of_frame(LinkType::null_loopback, le).ok());
  EXPECT_TRUE(ip_datagram_of_frame(LinkType::null_loopback, be).ok());
  EXPECT_EQ(ip_datagram_of_frame(LinkType::null_loopback, other).error(), Error::unsupported);
}

TEST(LinkLayer, EveryTruncationIsATypedError) {
  struct Case {
    LinkType type;
    std::vector<std::uint8_t> frame;
    std::size_t header_length;  // every prefix up to and including this many bytes fails
  };
  std::vector<std::uint8_t> sll2{0x08, 0x00};
  sll2.resize(20, 0);
  sll2.push_back(0x45);
  const Case cases[] = {{LinkType::ethernet, ethernet_frame({0x8100, 0x0800}), 18},
                        {LinkType::linux_sll2, sll2, 20},
                        {LinkType::null_loopback, {2, 0, 0, 0, 0x45}, 4}};
  for (const auto& c : cases) {
    ASSERT_TRUE(ip_datagram_of_frame(c.type, c.frame).ok());
    for (std::size_t n = 0; n <= c.header_length; ++n) {
      auto r = ip_datagram_of_frame(c.type, Bytes(c.frame).first(n));
      ASSERT_FALSE(r.ok()) << "length " << n;
      EXPECT_EQ(r.error(), Error::truncated);
    }
  }
  EXPECT_EQ(ip_datagram_of_frame(LinkType::raw, {}).error(), Error::truncated);
  EXPECT_EQ(ip_datagram_of_frame(static_cast<LinkType>(9999), kIp).error(), Error::unsupported);
}

}  // namespace
}  // namespace quicstep::common
