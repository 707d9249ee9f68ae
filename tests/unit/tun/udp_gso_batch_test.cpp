// Reply packets joined into UDP GSO super-packets: which runs may be joined, the virtio
// header and headers of the super-packet the kernel segments, and each datagram rebuilt
// exactly as it was added (what a kernel without UDP GSO gets, packet by packet).
#include "client/tun/udp_gso_batch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "client/tun/reply_packet.hpp"
#include "common/ip_packet.hpp"
#include "common/ipv4.hpp"
#include "unit/client/client_packets.hpp"

namespace quicstep::client::tun {
namespace {

using namespace core::testing;  // NOLINT: the test packets

common::FlowKey flow(const char* client, const char* server, std::uint16_t cport = 40000) {
  const ByteVec outbound = std::strchr(client, ':') ? udp6(cport, 443, ByteVec(1), client, server)
                                                    : udp4(cport, 443, ByteVec(1), client, server);
  auto p = common::parse_ip_packet(outbound);
  EXPECT_TRUE(p.ok());
  return common::FlowKey::from_client(*p);
}

// The reply packet carrying `size` bytes of `fill` from the flow's server.
ByteVec reply(const common::FlowKey& f, std::size_t size, std::uint8_t fill) {
  std::vector<std::uint8_t> out(kMaxReplyPacket);
  const std::size_t n = write_reply_packet(f, ByteVec(size, fill), out);
  EXPECT_GT(n, 0u);
  return ByteVec(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
}

VirtioNetHdr header_of(std::span<const std::uint8_t> form) {
  VirtioNetHdr h;
  std::memcpy(&h, form.data(), sizeof h);
  return h;
}

std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }

// The folded pseudo-header sum a CHECKSUM_PARTIAL packet carries in its UDP checksum field.
std::uint16_t partial_sum(const common::FlowKey& f, std::size_t udp_length) {
  std::uint32_t sum = common::kIpProtoUdp + static_cast<std::uint32_t>(udp_length);
  for (const auto* a : {&f.server, &f.client}) {
    const auto o = a->octets();
    for (std::size_t i = 0; i < o.size(); i += 2) sum += static_cast<std::uint32_t>(o[i] << 8 | o[i + 1]);
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

ByteVec segment(const UdpGsoBatch& b, std::size_t i) {
  std::vector<std::uint8_t> out(kVirtioNetHdrLength + kMaxReplyPacket);
  const std::size_t n = b.segment(i, out);
  EXPECT_GT(n, kVirtioNetHdrLength);
  for (std::size_t k = 0; k < kVirtioNetHdrLength; ++k) EXPECT_EQ(out[k], 0) << "header byte " << k;
  return ByteVec(out.begin() + kVirtioNetHdrLength, out.begin() + static_cast<std::ptrdiff_t>(n));
}

struct Family {
  const char* name;
  const char* client;
  const char* server;
  std::size_t headers;
};
const Family kFamilies[] = {{"v4", "198.18.0.2", "198.18.1.10", 28},
                            {"v6", "2001:db8::2", "2001:db8:1::10", 48}};

TEST(UdpGsoBatch, ARunOfOneFlowIsOneSuperPacketThatTheKernelCutsBackIntoTheSameDatagrams) {
  for (const Family& fam : kFamilies) {
    SCOPED_TRACE(fam.name);
    const common::FlowKey f = flow(fam.client, fam.server);
    std::vector<ByteVec> packets;
    for (int i = 0; i < 10; ++i) packets.push_back(reply(f, 1200, static_cast<std::uint8_t>(i)));
    packets.push_back(reply(f, 500, 0xee));  // a shorter last one ends the run
    UdpGsoBatch b;
    for (const ByteVec& p : packets) ASSERT_TRUE(b.add(p));
    EXPECT_FALSE(b.add(reply(f, 100, 1))) << "nothing may follow a shorter datagram";
    ASSERT_EQ(b.segments(), 11u);

    const auto form = b.write_form();
    const VirtioNetHdr h = header_of(form);
    EXPECT_EQ(h.flags, kVirtioNeedsCsum);
    EXPECT_EQ(h.gso_type, kVirtioGsoUdpL4);
    EXPECT_EQ(h.gso_size, 1200);
    EXPECT_EQ(h.hdr_len, fam.headers);
    EXPECT_EQ(h.csum_start, fam.headers - 8);
    EXPECT_EQ(h.csum_offset, 6);
    const std::uint8_t* ip = form.data() + kVirtioNetHdrLength;
    const std::size_t total = form.size() - kVirtioNetHdrLength;
    const std::size_t udp_length = 8 + 10 * 1200 + 500;
    EXPECT_EQ(total, fam.headers + 10 * 1200 + 500);
    if (fam.headers == 28) {
      EXPECT_EQ(get16(ip + 2), total);
      EXPECT_EQ(common::internet_checksum(common::Bytes(ip, 20)), 0) << "IPv4 header checksum";
    } else {
      EXPECT_EQ(get16(ip + 4), udp_length);
    }
    const std::uint8_t* udp = ip + fam.headers - 8;
    EXPECT_EQ(get16(udp + 4), udp_length);
    EXPECT_EQ(get16(udp + 6), partial_sum(f, udp_length));
    // The payloads in order, and each datagram rebuilt as it was added.
    for (std::size_t i = 0; i < packets.size(); ++i) {
      const std::size_t size = i < 10 ? 1200 : 500;
      EXPECT_EQ(0, std::memcmp(ip + fam.headers + i * 1200, packets[i].data() + fam.headers, size));
      EXPECT_EQ(segment(b, i), packets[i]) << "datagram " << i;
    }
  }
}

TEST(UdpGsoBatch, ABatchOfOneIsThePacketWithItsPartialChecksum) {
  for (const auto& f : {flow("198.18.0.2", "198.18.1.10"), flow("2001:db8::2", "2001:db8:1::10")}) {
    const std::size_t headers = f.client.family == common::IpFamily::v4 ? 28 : 48;
    const ByteVec p = reply(f, 700, 3);
    // Added with a complete checksum or with the partial one: written the same way.
    std::vector<std::uint8_t> partial(kMaxReplyPacket);
    const std::size_t n = write_reply_packet(f, ByteVec(700, 3), partial, ReplyChecksum::partial);
    for (const ByteVec& given : {p, ByteVec(partial.begin(), partial.begin() + static_cast<std::ptrdiff_t>(n))}) {
      UdpGsoBatch b;
      ASSERT_TRUE(b.add(given));
      const auto form = b.write_form();
      const VirtioNetHdr h = header_of(form);
      EXPECT_EQ(h.flags, kVirtioNeedsCsum);
      EXPECT_EQ(h.gso_type, kVirtioGsoNone);
      EXPECT_EQ(h.csum_start, headers - 8);
      EXPECT_EQ(h.csum_offset, 6);
      ByteVec expected = p;
      expected[headers - 2] = static_cast<std::uint8_t>(partial_sum(f, 708) >> 8);
      expected[headers - 1] = static_cast<std::uint8_t>(partial_sum(f, 708));
      EXPECT_EQ(ByteVec(form.begin() + kVirtioNetHdrLength, form.end()), expected);
      // Rebuilt for a plain write, it is the packet with its complete checksum again.
      EXPECT_EQ(segment(b, 0), p);
    }
  }
  // An empty datagram is written alone too: nothing follows it.
  const common::FlowKey f = flow("198.18.0.2", "198.18.1.10");
  UdpGsoBatch e;
  ASSERT_TRUE(e.add(reply(f, 0, 0)));
  EXPECT_FALSE(e.add(reply(f, 0, 0)));
}

TEST(UdpGsoBatch, OnlyWhatTheKernelsSegmentationReproducesIsJoined) {
  const common::FlowKey f = flow("198.18.0.2", "198.18.1.10");
  const ByteVec first = reply(f, 1200, 1);
  auto refused = [&](const ByteVec& next, const char* why) {
    UdpGsoBatch b;
    ASSERT_TRUE(b.add(first));
    EXPECT_FALSE(b.add(next)) << why;
    EXPECT_EQ(b.segments(), 1u) << why;
  };
  refused(reply(flow("198.18.0.2", "198.18.1.10", 40001), 1200, 1), "another application port");
  refused(reply(flow("198.18.0.3", "198.18.1.10"), 1200, 1), "another application address");
  refused(reply(flow("198.18.0.2", "198.18.1.11"), 1200, 1), "another server");
  refused(reply(flow("2001:db8::2", "2001:db8:1::10"), 1200, 1), "another family");
  refused(reply(f, 1201, 1), "larger than the first");
  ByteVec ttl = reply(f, 1200, 1);
  ttl[8] = 63;
  refused(ttl, "another TTL");
  ByteVec tos = reply(f, 1200, 1);
  tos[1] = 0x02;
  refused(tos, "another ECN mark");
  ByteVec id = reply(f, 1200, 1);
  id[5] = 7;
  refused(id, "another IPv4 identification");

  // Not plain UDP: never joined, not even as a batch's first packet.
  UdpGsoBatch b;
  ByteVec fragment = first;
  fragment[6] = 0x20;  // MF
  EXPECT_FALSE(b.add(fragment));
  ByteVec options = first;
  options[0] = 0x46;  // IHL 6
  EXPECT_FALSE(b.add(options));
  ByteVec tcp = first;
  tcp[9] = 6;
  EXPECT_FALSE(b.add(tcp));
  EXPECT_TRUE(b.empty());
}

TEST(UdpGsoBatch, AtMostSixtyFourSegmentsAndSixtyFourKilobytes) {
  const common::FlowKey f = flow("198.18.0.2", "198.18.1.10");
  UdpGsoBatch b;
  for (std::size_t i = 0; i < UdpGsoBatch::kMaxSegments; ++i) ASSERT_TRUE(b.add(reply(f, 100, 1)));
  EXPECT_FALSE(b.add(reply(f, 100, 1)));
  UdpGsoBatch big;
  std::size_t joined = 0;
  while (big.add(reply(f, 1400, 2))) ++joined;
  EXPECT_EQ(joined, (65535 - 28) / 1400) << "an IPv4 total length is 16 bits";
}

TEST(UdpGsoBatch, EveryTruncatedPacketIsRefused) {
  const ByteVec p = reply(flow("198.18.0.2", "198.18.1.10"), 100, 9);
  const ByteVec p6 = reply(flow("2001:db8::2", "2001:db8:1::10"), 100, 9);
  for (const ByteVec* whole : {&p, &p6}) {
    for (std::size_t n = 0; n < whole->size(); ++n) {
      UdpGsoBatch b;
      EXPECT_FALSE(b.add(common::Bytes(whole->data(), n))) << n << " of " << whole->size();
    }
  }
}

}  // namespace
}  // namespace quicstep::client::tun
