// The packets the TUN engine writes back into the TUN: parsed back by the wire library to
// the same addresses, ports and payload, with correct IPv4 header and UDP checksums.
#include "client/tun/reply_packet.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/ip_packet.hpp"
#include "common/ipv4.hpp"
#include "unit/client/client_packets.hpp"

namespace quicstep::client::tun {
namespace {

using namespace core::testing;  // NOLINT: the test packets

common::FlowKey flow_of(const ByteVec& outbound) {
  auto p = common::parse_ip_packet(outbound);
  EXPECT_TRUE(p.ok());
  return common::FlowKey::from_client(*p);
}

// The UDP checksum over the pseudo-header, as a receiver verifies it: 0 when correct.
std::uint16_t verify_udp(const common::IpPacket& p) {
  std::vector<std::uint8_t> pseudo;
  for (auto b : p.src.octets()) pseudo.push_back(b);
  for (auto b : p.dst.octets()) pseudo.push_back(b);
  const auto len = p.ip_payload.size();
  pseudo.insert(pseudo.end(), {0, 0, static_cast<std::uint8_t>(len >> 8),
                               static_cast<std::uint8_t>(len), 0, 0, 0, common::kIpProtoUdp});
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < pseudo.size(); i += 2) sum += pseudo[i] << 8 | pseudo[i + 1];
  return common::internet_checksum(p.ip_payload, sum);
}

void expect_reply(const ByteVec& outbound, const ByteVec& payload) {
  const common::FlowKey flow = flow_of(outbound);
  std::vector<std::uint8_t> out(kMaxReplyPacket);
  const std::size_t n = write_reply_packet(flow, payload, out);
  ASSERT_GT(n, 0u);
  auto p = common::parse_ip_packet(common::Bytes(out.data(), n));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->src, flow.server);
  EXPECT_EQ(p->dst, flow.client);
  EXPECT_EQ(p->src_port, flow.server_port);
  EXPECT_EQ(p->dst_port, flow.client_port);
  EXPECT_EQ(p->protocol, common::kIpProtoUdp);
  EXPECT_FALSE(p->is_fragment);
  EXPECT_EQ(p->ttl, 64);
  EXPECT_EQ(std::vector<std::uint8_t>(p->payload.begin(), p->payload.end()), payload);
  EXPECT_EQ(common::FlowKey::from_server(*p), flow);
  ASSERT_TRUE(p->udp.has_value());
  EXPECT_NE(p->udp->checksum, 0);
  EXPECT_EQ(verify_udp(*p), 0);
  if (flow.client.family == common::IpFamily::v4) {
    EXPECT_EQ(n, payload.size() + kIpv4UdpHeaders);
    EXPECT_EQ(common::internet_checksum(common::Bytes(out.data(), 20)), 0);
  } else {
    EXPECT_EQ(n, payload.size() + kIpv6UdpHeaders);
  }
}

TEST(ReplyPacket, Ipv4) { expect_reply(out4(40000, short_header()), short_header(1200, 0x43)); }
TEST(ReplyPacket, Ipv6) { expect_reply(out6(40001, short_header()), short_header(1200, 0x47)); }
// Byte for byte what the tests' independent packet builder makes (its own checksum code).
TEST(ReplyPacket, MatchesTheIndependentBuilder) {
  std::vector<std::uint8_t> out(kMaxReplyPacket);
  const ByteVec payload = short_header(333, 0x44);
  std::size_t n = write_reply_packet(flow_of(out4(40002, short_header())), payload, out);
  EXPECT_EQ(ByteVec(out.begin(), out.begin() + n),
            PacketBuilder().ipv4(kServer4, kClient4).dont_fragment().udp(443, 40002)
                .payload(payload).build());
  n = write_reply_packet(flow_of(out6(40003, short_header())), payload, out);
  EXPECT_EQ(ByteVec(out.begin(), out.begin() + n),
            PacketBuilder().ipv6(kServer6, kClient6).udp(443, 40003).payload(payload).build());
}

TEST(ReplyPacket, EmptyAndOddPayloads) {
  expect_reply(out4(1, short_header()), {});
  expect_reply(out6(2, short_header()), {});
  for (std::size_t size : {1, 3, 63, 1201}) {
    expect_reply(out4(3, short_header()), short_header(size, 0x40));
    expect_reply(out6(4, short_header()), short_header(size, 0x40));
  }
}

TEST(ReplyPacket, ChecksumThatSumsToZeroIsSentAsAllOnes) {
  // Find a payload whose UDP checksum computes to 0: it must go out as 0xffff (RFC 768).
  const common::FlowKey flow = flow_of(out4(5, short_header()));
  std::vector<std::uint8_t> out(kMaxReplyPacket);
  bool seen = false;
  for (std::uint32_t v = 0; v < 0x10000 && !seen; ++v) {
    const ByteVec payload{static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
    const std::size_t n = write_reply_packet(flow, payload, out);
    ASSERT_GT(n, 0u);
    if (out[26] == 0xff && out[27] == 0xff) seen = true;
    EXPECT_FALSE(out[26] == 0 && out[27] == 0);
  }
  EXPECT_TRUE(seen);
}

TEST(ReplyPacket, APartialChecksumIsThePseudoHeaderSumThatCompletesToTheFullOne) {
  for (const ByteVec& outbound : {out4(8, short_header()), out6(9, short_header())}) {
    const common::FlowKey flow = flow_of(outbound);
    const std::size_t headers = flow.client.family == common::IpFamily::v4 ? 28 : 48;
    for (std::size_t size : {0, 1, 2, 1201}) {
      const ByteVec payload = short_header(size == 0 ? 1 : size, 0x40);
      std::vector<std::uint8_t> full(kMaxReplyPacket), partial(kMaxReplyPacket);
      const std::size_t n = write_reply_packet(flow, payload, full);
      ASSERT_EQ(write_reply_packet(flow, payload, partial, ReplyChecksum::partial), n);
      // Everything but the UDP checksum field is the same packet.
      for (std::size_t i = 0; i < n; ++i) {
        if (i != headers - 2 && i != headers - 1) {
          ASSERT_EQ(full[i], partial[i]) << "byte " << i;
        }
      }
      // What the kernel does for CHECKSUM_PARTIAL: the complemented sum from csum_start to
      // the end, the field included, gives the complete checksum (0 sent as 0xffff).
      std::uint16_t completed =
          common::internet_checksum(common::Bytes(partial.data() + headers - 8, n - headers + 8));
      if (completed == 0) completed = 0xffff;
      EXPECT_EQ(completed, full[headers - 2] << 8 | full[headers - 1]) << "size " << size;
    }
  }
}

TEST(ReplyPacket, RefusesWhatDoesNotFit) {
  const common::FlowKey v4 = flow_of(out4(6, short_header()));
  const common::FlowKey v6 = flow_of(out6(7, short_header()));
  std::vector<std::uint8_t> out(kMaxReplyPacket);
  const ByteVec payload(100, 0x41);
  EXPECT_EQ(write_reply_packet(v4, payload, std::span(out).first(127)), 0u);
  EXPECT_EQ(write_reply_packet(v4, payload, std::span(out).first(128)), 128u);
  EXPECT_EQ(write_reply_packet(v6, payload, std::span(out).first(147)), 0u);
  EXPECT_EQ(write_reply_packet(v6, payload, std::span(out).first(148)), 148u);
  // IPv4's total length and IPv6's payload length are 16 bits.
  EXPECT_GT(write_reply_packet(v4, ByteVec(65535 - 28, 1), out), 0u);
  EXPECT_EQ(write_reply_packet(v4, ByteVec(65535 - 27, 1), out), 0u);
  EXPECT_GT(write_reply_packet(v6, ByteVec(65535 - 8, 1), out), 0u);
  EXPECT_EQ(write_reply_packet(v6, ByteVec(65535 - 7, 1), out), 0u);
  common::FlowKey mixed = v4;
  mixed.server = v6.server;
  EXPECT_EQ(write_reply_packet(mixed, payload, out), 0u);
}

}  // namespace
}  // namespace quicstep::client::tun
