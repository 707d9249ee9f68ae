// packet_forge and dns_forgery: what the censor injects must parse back, with right checksums.
#include <gtest/gtest.h>

#include "common/dns_message.hpp"
#include "common/ip_packet.hpp"
#include "common/ipv4.hpp"
#include "lab/censor/dns_forgery.hpp"
#include "lab/censor/packet_forge.hpp"
#include "support/packet_builder.hpp"

namespace quicstep::censor {
namespace {

using common::IpAddress;

IpAddress v4(const char* s) { return IpAddress::v4(test::ipv4_addr(s)); }
IpAddress v6(const char* s) { return IpAddress::v6(test::ipv6_addr(s)); }

TEST(PacketForge, TcpRstParsesWithValidChecksums) {
  for (auto [src, dst] : {std::pair{v4("198.18.1.2"), v4("198.18.10.11")},
                          std::pair{v6("2001:db8:1::2"), v6("2001:db8:10::11")}}) {
    const Packet p = build_tcp_rst(src, dst, 40000, 443, 1000, 5000);
    auto ip = common::parse_ip_packet(p);
    ASSERT_TRUE(ip.ok());
    ASSERT_TRUE(ip->tcp);
    EXPECT_EQ(ip->src, src);
    EXPECT_EQ(ip->dst, dst);
    EXPECT_TRUE(ip->tcp->rst());
    EXPECT_TRUE(ip->tcp->ack_flag());
    EXPECT_EQ(ip->tcp->seq, 1000u);
    EXPECT_EQ(ip->tcp->ack, 5000u);
    EXPECT_EQ(ip->src_port, 40000);
    EXPECT_TRUE(ip->payload.empty());
    EXPECT_TRUE(common::transport_checksum_valid(*ip));
    if (src.family == common::IpFamily::v4) {
      EXPECT_EQ(common::internet_checksum(common::Bytes(p).first(20)), 0);
    }
  }
}

TEST(PacketForge, SameBytesAsTheTestBuilder) {
  const Packet p = build_udp(v4("198.18.4.53"), v4("198.18.1.2"), 53, 40053, test::bytes_of("hello"));
  const auto expected = test::PacketBuilder().ipv4("198.18.4.53", "198.18.1.2").dont_fragment()
                            .udp(53, 40053).payload("hello").build();
  EXPECT_EQ(p, expected);
}

TEST(DnsForgery, AnswersAAndAaaa) {
  ForgedAddresses forged;
  for (std::uint16_t type : {common::dns_type::kA, common::dns_type::kAaaa}) {
    auto answer = forge_dns_answer(common::make_dns_query(0x4242, "www.blocked.test", type), forged);
    ASSERT_TRUE(answer.ok());
    auto msg = common::parse_dns_message(*answer);
    ASSERT_TRUE(msg.ok());
    EXPECT_EQ(msg->header.id, 0x4242);
    EXPECT_TRUE(msg->header.qr);
    EXPECT_TRUE(msg->header.rd);
    EXPECT_EQ(msg->header.ancount, 1);
    ASSERT_EQ(msg->questions.size(), 1u);
    EXPECT_EQ(msg->questions[0].name, "www.blocked.test");
    // The answer record: pointer to the question, type, class, TTL, rdata.
    const std::size_t rr = answer->size() - (type == common::dns_type::kA ? 4 : 16) - 12;
    EXPECT_EQ((*answer)[rr], 0xc0);
    EXPECT_EQ((*answer)[rr + 1], 12);
    EXPECT_EQ((*answer)[rr + 3], type);
    if (type == common::dns_type::kA) {
      EXPECT_TRUE(std::equal(forged.v4.begin(), forged.v4.end(), answer->end() - 4));
    } else {
      EXPECT_TRUE(std::equal(forged.v6.begin(), forged.v6.end(), answer->end() - 16));
    }
  }
}

TEST(DnsForgery, RefusesWhatItCannotAnswer) {
  ForgedAddresses forged;
  auto https = forge_dns_answer(common::make_dns_query(1, "blocked.test", common::dns_type::kHttps), forged);
  EXPECT_EQ(https.error(), common::Error::unsupported);
  common::DnsMessage response = common::make_dns_query(1, "blocked.test", common::dns_type::kA);
  response.header.qr = true;
  EXPECT_EQ(forge_dns_answer(response, forged).error(), common::Error::bad_value);
  common::DnsMessage empty = response;
  empty.header.qr = false;
  empty.questions.clear();
  EXPECT_EQ(forge_dns_answer(empty, forged).error(), common::Error::bad_value);
}

}  // namespace
}  // namespace quicstep::censor
