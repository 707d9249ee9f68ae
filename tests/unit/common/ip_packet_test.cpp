#include "common/ip_packet.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/ipv4.hpp"
#include "support/packet_builder.hpp"

namespace quicstep::common {
namespace {

using test::from_hex;
using test::PacketBuilder;
namespace tf = test::tcp;

// Captured with tcpdump on a veth pair between two throwaway namespaces (tx checksum
// offload off, so the kernel's checksums are in the bytes), Ethernet header removed.
// `dig @198.18.53.53 open.test A`: 198.18.53.1:46148 -> 198.18.53.53:53, EDNS + cookie.
const char* const kCapturedUdp4Query =
    "4500 004e 5ccd 0000 4011 2777 c612 3501 c612 3535 b444 0035 003a 055e 0b10 0120"
    "0001 0000 0000 0001 046f 7065 6e04 7465 7374 0000 0100 0100 0029 04d0 0000 0000"
    "000c 000a 0008 f0d0 da9d d672 cf69";
// `dig @2001:db8:53::53 WWW.Open.Test AAAA`: [2001:db8:53::1]:45636 -> [2001:db8:53::53]:53.
const char* const kCapturedUdp6Query =
    "6008 4bbf 003e 1140 2001 0db8 0053 0000 0000 0000 0000 0001 2001 0db8 0053 0000"
    "0000 0000 0000 0053 b244 0035 003e 4266 ff48 0120 0001 0000 0000 0001 0357 5757"
    "044f 7065 6e04 5465 7374 0000 1c00 0100 0029 04d0 0000 0000 000c 000a 0008 447a"
    "9f5d be5a e430";
// `dig +tcp +noedns`: the SYN (MSS, SACK, timestamps, window scale) and the query segment.
const char* const kCapturedTcpSyn =
    "4500 003c 9584 4000 4006 aedc c612 3501 c612 3535 acc5 0035 6b61 c01e 0000 0000"
    "a002 fc94 f81e 0000 0204 04c4 0402 080a 5a64 2aff 0000 0000 0103 030a";
const char* const kCapturedTcpQuery =
    "4500 0051 9586 4000 4006 aec5 c612 3501 c612 3535 acc5 0035 6b61 c01f d91f c062"
    "8018 0040 9fde 0000 0101 080a 5a64 2aff d9af 54c2 001b ec5b 0120 0001 0000 0000"
    "0000 046f 7065 6e04 7465 7374 0000 0100 01";

TEST(IpPacket, ParsesCapturedUdp4DnsQuery) {
  const auto pkt = from_hex(kCapturedUdp4Query);
  auto p = parse_ip_packet(pkt);
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  EXPECT_EQ(p->family, IpFamily::v4);
  EXPECT_EQ(p->src.to_string(), "198.18.53.1");
  EXPECT_EQ(p->dst.to_string(), "198.18.53.53");
  EXPECT_EQ(p->protocol, kIpProtoUdp);
  EXPECT_EQ(p->ttl, 64);
  EXPECT_EQ(p->src_port, 46148);
  EXPECT_EQ(p->dst_port, 53);
  ASSERT_TRUE(p->udp.has_value());
  EXPECT_FALSE(p->tcp.has_value());
  EXPECT_EQ(p->udp->length, 58);
  EXPECT_EQ(p->payload.size(), 50u);
  EXPECT_EQ(p->payload[0], 0x0b);  // DNS id 0x0b10
  EXPECT_FALSE(p->is_fragment);
  EXPECT_TRUE(transport_checksum_valid(*p));
}

TEST(IpPacket, ParsesCapturedUdp6DnsQuery) {
  const auto pkt = from_hex(kCapturedUdp6Query);
  auto p = parse_ip_packet(pkt);
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  EXPECT_EQ(p->family, IpFamily::v6);
  EXPECT_EQ(p->src.to_string(), "2001:db8:53::1");
  EXPECT_EQ(p->dst.to_string(), "2001:db8:53::53");
  EXPECT_EQ(p->src_port, 45636);
  EXPECT_EQ(p->dst_port, 53);
  EXPECT_EQ(p->payload.size(), 54u);
  EXPECT_TRUE(transport_checksum_valid(*p));
}

TEST(IpPacket, ParsesCapturedTcpSegments) {
  const auto syn = from_hex(kCapturedTcpSyn);
  auto p = parse_ip_packet(syn);
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  ASSERT_TRUE(p->tcp.has_value());
  EXPECT_TRUE(p->tcp->syn());
  EXPECT_FALSE(p->tcp->ack_flag());
  EXPECT_EQ(p->tcp->seq, 1801568286u);
  EXPECT_EQ(p->tcp->data_offset, 10);
  EXPECT_EQ(p->tcp->options.size(), 20u);
  EXPECT_EQ(p->src_port, 44229);
  EXPECT_TRUE(p->payload.empty());
  EXPECT_TRUE(transport_checksum_valid(*p));

  const auto query = from_hex(kCapturedTcpQuery);
  p = parse_ip_packet(query);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->tcp.has_value());
  EXPECT_TRUE(p->tcp->psh());
  EXPECT_TRUE(p->tcp->ack_flag());
  EXPECT_EQ(p->tcp->ack, 3642736738u);
  EXPECT_EQ(p->payload.size(), 29u);  // 2-byte length prefix + 27-byte DNS message
  EXPECT_TRUE(transport_checksum_valid(*p));
}

// The builder reproduces the kernel's bytes, checksums included.
TEST(IpPacket, BuilderMatchesCapturedPackets) {
  const auto udp4 = from_hex(kCapturedUdp4Query);
  const auto built4 = PacketBuilder()
                          .ipv4("198.18.53.1", "198.18.53.53")
                          .ip_id(0x5ccd)
                          .udp(46148, 53)
                          .payload(Bytes(udp4).subspan(28))
                          .build();
  EXPECT_EQ(built4, udp4);

  const auto udp6 = from_hex(kCapturedUdp6Query);
  const auto built6 = PacketBuilder()
                          .ipv6("2001:db8:53::1", "2001:db8:53::53")
                          .flow_label(0x84bbf)
                          .udp(45636, 53)
                          .payload(Bytes(udp6).subspan(48))
                          .build();
  EXPECT_EQ(built6, udp6);

  const auto query = from_hex(kCapturedTcpQuery);
  const auto built_tcp = PacketBuilder()
                             .ipv4("198.18.53.1", "198.18.53.53")
                             .ip_id(0x9586)
                             .dont_fragment()
                             .tcp(44229, 53)
                             .seq(1801568287)
                             .ack(3642736738)
                             .flags(tf::kAck | tf::kPsh)
                             .window(64)
                             .tcp_options(from_hex("0101 080a 5a64 2aff d9af 54c2"))
                             .payload(Bytes(query).subspan(52))
                             .build();
  EXPECT_EQ(built_tcp, query);
}

TEST(IpPacket, BuiltChecksumsVerify) {
  const std::vector<std::vector<std::uint8_t>> packets = {
      PacketBuilder().ipv4("198.18.0.1", "198.18.1.1").udp(1, 2).payload("odd").build(),
      PacketBuilder()
          .ipv4("198.18.0.1", "198.18.1.1")
          .tcp(1, 2)
          .flags(tf::kSyn)
          .tcp_options({2, 4, 5, 0xb4})
          .build(),
      PacketBuilder().ipv6("2001:db8::1", "2001:db8::2").udp(1, 2).payload("odd").build(),
      PacketBuilder()
          .ipv6("2001:db8::1", "2001:db8::2")
          .hop_by_hop()
          .tcp(1, 2)
          .payload("even")
          .build(),
  };
  for (const auto& pkt : packets) {
    auto p = parse_ip_packet(pkt);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(transport_checksum_valid(*p));
  }
  auto bad = PacketBuilder()
                 .ipv4("198.18.0.1", "198.18.1.1")
                 .udp(1, 2)
                 .payload("x")
                 .udp_checksum(0x1234)
                 .build();
  auto p = parse_ip_packet(bad);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(transport_checksum_valid(*p));
  // IPv4 UDP checksum 0: "no checksum", accepted.
  bad = PacketBuilder()
            .ipv4("198.18.0.1", "198.18.1.1")
            .udp(1, 2)
            .payload("x")
            .udp_checksum(0)
            .build();
  p = parse_ip_packet(bad);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(transport_checksum_valid(*p));
}

TEST(IpPacket, OtherProtocolsHaveNoPorts) {
  const auto icmp = PacketBuilder()
                        .ipv4("198.18.0.1", "198.18.1.1")
                        .protocol(1)
                        .payload(from_hex("0800 f7ff"))
                        .build();
  auto p = parse_ip_packet(icmp);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->protocol, 1);
  EXPECT_EQ(p->src_port, 0);
  EXPECT_EQ(p->dst_port, 0);
  EXPECT_FALSE(p->udp || p->tcp);
  EXPECT_EQ(p->payload.size(), 4u);
  EXPECT_EQ(p->payload.data(), p->ip_payload.data());
}

TEST(IpPacket, Fragments) {
  // First fragment of a large UDP datagram: ports known, payload partial.
  auto first = PacketBuilder()
                   .ipv4("198.18.0.1", "198.18.1.1")
                   .fragment(0, true, 5)
                   .udp(40000, 53)
                   .payload("start")
                   .udp_length(1000)
                   .build();
  auto p = parse_ip_packet(first);
  ASSERT_TRUE(p.ok()) << to_string(p.error());
  EXPECT_TRUE(p->is_fragment);
  EXPECT_TRUE(p->has_l4_header);
  EXPECT_EQ(p->dst_port, 53);
  EXPECT_EQ(p->payload.size(), 5u);
  EXPECT_FALSE(transport_checksum_valid(*p));

  // A later fragment carries no ports, on IPv4 and IPv6.
  for (const auto& later : {PacketBuilder()
                                .ipv4("198.18.0.1", "198.18.1.1")
                                .fragment(100, false, 5)
                                .protocol(17)
                                .payload(from_hex("9c40 0035 6d69 6464 6c65"))
                                .build(),
                            PacketBuilder()
                                .ipv6("2001:db8::1", "2001:db8::2")
                                .fragment(100, false, 5)
                                .protocol(17)
                                .payload(from_hex("9c40 0035 6d69 6464 6c65"))
                                .build()}) {
    p = parse_ip_packet(later);
    ASSERT_TRUE(p.ok()) << to_string(p.error());
    EXPECT_TRUE(p->is_fragment);
    EXPECT_FALSE(p->has_l4_header);
    EXPECT_EQ(p->protocol, 17);
    EXPECT_FALSE(p->udp.has_value());
    EXPECT_EQ(p->dst_port, 0);
    EXPECT_EQ(p->payload.size(), 10u);
  }

  // An IPv6 atomic fragment (offset 0, no more) holds a whole datagram.
  auto atomic = PacketBuilder()
                    .ipv6("2001:db8::1", "2001:db8::2")
                    .fragment(0, false, 5)
                    .udp(1, 443)
                    .payload("q")
                    .build();
  p = parse_ip_packet(atomic);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->is_fragment);
  EXPECT_EQ(p->dst_port, 443);
  EXPECT_TRUE(transport_checksum_valid(*p));
}

TEST(IpPacket, EveryTruncationIsATypedError) {
  const std::vector<std::vector<std::uint8_t>> packets = {
      from_hex(kCapturedUdp4Query),
      from_hex(kCapturedUdp6Query),
      from_hex(kCapturedTcpSyn),
      PacketBuilder()
          .ipv6("2001:db8::1", "2001:db8::2")
          .hop_by_hop()
          .fragment(0, true, 1)
          .tcp(1, 2)
          .payload("x")
          .build(),
  };
  for (const auto& pkt : packets) {
    for (std::size_t n = 0; n < pkt.size(); ++n) {
      auto p = parse_ip_packet(Bytes(pkt).first(n));
      ASSERT_FALSE(p.ok()) << "prefix " << n;
      EXPECT_TRUE(p.error() == Error::truncated || p.error() == Error::bad_length)
          << to_string(p.error());
    }
    EXPECT_TRUE(parse_ip_packet(pkt).ok());
  }
}

TEST(IpPacket, RejectsBadPackets) {
  struct Case {
    const char* what;
    std::vector<std::uint8_t> packet;
    Error error;
  };
  const Case cases[] = {
      {"empty", {}, Error::truncated},
      {"version 5", {0x55, 0, 0, 0}, Error::unsupported},
      {"version 0", PacketBuilder().ipv4("1.1.1.1", "2.2.2.2").version(0).build(),
       Error::unsupported},
      {"IHL 3", PacketBuilder().ipv4("1.1.1.1", "2.2.2.2").ipv4_ihl(3).udp(1, 2).build(),
       Error::bad_value},
      {"UDP length lies",
       PacketBuilder().ipv4("1.1.1.1", "2.2.2.2").udp(1, 2).udp_length(99).build(),
       Error::bad_length},
      {"UDP header cut",
       PacketBuilder().ipv4("1.1.1.1", "2.2.2.2").protocol(17).payload("abc").build(),
       Error::truncated},
      {"TCP data offset 4", PacketBuilder().ipv6("::1", "::2").tcp(1, 2).tcp_data_offset(4).build(),
       Error::bad_value},
  };
  for (const Case& c : cases) {
    auto p = parse_ip_packet(c.packet);
    ASSERT_FALSE(p.ok()) << c.what;
    EXPECT_EQ(p.error(), c.error) << c.what << ": " << to_string(p.error());
  }
}

TEST(IpPacket, AddressTextForms) {
  EXPECT_EQ(IpAddress::v4({198, 18, 0, 1}).to_string(), "198.18.0.1");
  EXPECT_EQ(IpAddress::v6(test::ipv6_addr("2001:db8::1")).to_string(), "2001:db8::1");
  EXPECT_EQ(IpAddress::v6(test::ipv6_addr("::ffff:198.18.0.1")).to_string(), "::ffff:198.18.0.1");
  EXPECT_EQ(IpAddress::v6({}).to_string(), "::");
  EXPECT_EQ(IpAddress::v4({1, 2, 3, 4}).octets().size(), 4u);
  EXPECT_EQ(IpAddress::v6({}).octets().size(), 16u);
  EXPECT_NE(IpAddress::v4({0, 0, 0, 0}), IpAddress::v6({}));
}

}  // namespace
}  // namespace quicstep::common
