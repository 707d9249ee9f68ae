// The gate's raw-socket framing (gate/ip_udp_frame): what it writes must parse with the
// project's own IP/UDP parser, with valid IPv4 header and UDP checksums, for both families,
// and it must refuse what it cannot frame.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

#include "common/ip_packet.hpp"
#include "common/ipv4.hpp"
#include "server_testbed/gate/ip_udp_frame.hpp"

namespace gate = quicstep::server_testbed::gate;
namespace common = quicstep::common;

namespace {

sockaddr_storage v4(const char* addr, std::uint16_t port) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in&>(ss);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, addr, &a.sin_addr);
  return ss;
}

sockaddr_storage v6(const char* addr, std::uint16_t port) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in6&>(ss);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, addr, &a.sin6_addr);
  return ss;
}

std::vector<std::uint8_t> payload_of(std::size_t n) {
  std::vector<std::uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(0xf0 + i * 7);
  return p;
}

}  // namespace

TEST(IpUdpFrame, Ipv4ParsesWithValidChecksums) {
  for (std::size_t n : {0u, 1u, 61u, 120u, 1200u}) {  // odd lengths exercise the last octet
    const auto payload = payload_of(n);
    std::vector<std::uint8_t> out(2048);
    const std::size_t len = gate::write_ip_udp(out, v4("198.18.230.10", 443),
                                               v4("198.18.232.7", 40001), payload, 0x1234);
    ASSERT_EQ(len, gate::kIpv4UdpHeader + n);
    auto p = common::parse_ip_packet(common::Bytes(out.data(), len));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->family, common::IpFamily::v4);
    EXPECT_EQ(p->src.to_string(), "198.18.230.10");
    EXPECT_EQ(p->dst.to_string(), "198.18.232.7");
    EXPECT_EQ(p->src_port, 443);
    EXPECT_EQ(p->dst_port, 40001);
    ASSERT_EQ(p->payload.size(), n);
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p->payload.begin()));
    EXPECT_TRUE(common::transport_checksum_valid(*p));
    EXPECT_EQ(common::internet_checksum(common::Bytes(out.data(), 20)), 0);  // header checksum
    EXPECT_EQ(out[4] << 8 | out[5], 0x1234);
    out[len - 1] ^= 0x01;  // a flipped payload bit must break the UDP checksum
    if (n > 0) {
      EXPECT_FALSE(common::transport_checksum_valid(
          *common::parse_ip_packet(common::Bytes(out.data(), len))));
    }
  }
}

TEST(IpUdpFrame, Ipv6ParsesWithValidChecksum) {
  const auto payload = payload_of(77);
  std::vector<std::uint8_t> out(2048);
  const std::size_t len = gate::write_ip_udp(out, v6("2001:db8:230::10", 443),
                                             v6("2001:db8:232::99", 5555), payload, 0);
  ASSERT_EQ(len, gate::kIpv6UdpHeader + payload.size());
  auto p = common::parse_ip_packet(common::Bytes(out.data(), len));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->family, common::IpFamily::v6);
  EXPECT_EQ(p->src.to_string(), "2001:db8:230::10");
  EXPECT_EQ(p->dst.to_string(), "2001:db8:232::99");
  EXPECT_EQ(p->dst_port, 5555);
  EXPECT_TRUE(common::transport_checksum_valid(*p));
}

TEST(IpUdpFrame, RefusesWhatItCannotFrame) {
  const auto payload = payload_of(100);
  std::vector<std::uint8_t> small(gate::kIpv4UdpHeader + 99);
  EXPECT_EQ(gate::write_ip_udp(small, v4("198.18.0.1", 1), v4("198.18.0.2", 2), payload, 1), 0u);
  std::vector<std::uint8_t> out(2048);
  EXPECT_EQ(gate::write_ip_udp(out, v4("198.18.0.1", 1), v6("2001:db8::2", 2), payload, 1), 0u);
  sockaddr_storage unix_like{};
  unix_like.ss_family = AF_UNIX;
  EXPECT_EQ(gate::write_ip_udp(out, unix_like, unix_like, payload, 1), 0u);
}
