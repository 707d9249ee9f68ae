// quicstep-flood's packet builder, checked with the project's own parsers: every QUIC variant
// must parse with common::parse_quic_header, the encrypted ones must decrypt with the
// client's Initial keys and carry a ClientHello that common::parse_client_hello accepts; the
// IP framing must parse with valid checksums; the lab-range rule must refuse the outside.
#include <gtest/gtest.h>

#include <set>

#include "common/initial_protection.hpp"
#include "common/ip_packet.hpp"
#include "common/quic_frames.hpp"
#include "common/quic_header.hpp"
#include "common/tls_client_hello.hpp"
#include "server_testbed/flood/flood_packet.hpp"
#include "server_testbed/flood/lab_prefix.hpp"

namespace fl = quicstep::server_testbed::flood;
namespace common = quicstep::common;

namespace {

struct Decrypted {
  common::QuicHeader header;
  std::vector<std::uint8_t> plain;
  common::DecryptedPacket packet;
};

Decrypted decrypt(const std::vector<std::uint8_t>& datagram) {
  Decrypted d;
  auto header = common::parse_quic_header(datagram, 0);
  EXPECT_TRUE(header.ok());
  if (!header) return d;
  d.header = *header;
  auto keys = common::derive_initial_keys(header->version, header->dcid,
                                          common::Perspective::client);
  EXPECT_TRUE(keys.ok());
  d.plain.resize(header->packet.size());
  auto packet = common::decrypt_initial(*header, *keys, std::nullopt, d.plain);
  EXPECT_TRUE(packet.ok()) << common::to_string(packet.error());
  if (packet) d.packet = *packet;
  return d;
}

void expect_client_hello(const Decrypted& d) {
  auto frames = common::parse_initial_frames(d.packet.payload);
  ASSERT_TRUE(frames.ok());
  ASSERT_EQ(frames->crypto.size(), 1u);
  EXPECT_EQ(frames->crypto[0].offset, 0u);
  EXPECT_GT(frames->padding_bytes, 0u);
  auto hello = common::parse_client_hello(frames->crypto[0].data);
  ASSERT_TRUE(hello.ok()) << common::to_string(hello.error());
  EXPECT_EQ(hello->server_name(), "localhost");
  EXPECT_TRUE(hello->offers_tls13());
  ASSERT_EQ(hello->alpn.size(), 1u);
  EXPECT_TRUE(hello->has_quic_transport_parameters);
  ASSERT_EQ(hello->key_shares.size(), 1u);
  EXPECT_EQ(hello->key_shares[0].group, 0x001d);
}

TEST(FloodPacket, InitialDecryptsAndCarriesAClientHello) {
  std::mt19937_64 rng(1);
  fl::QuicFloodSpec spec;
  std::set<std::size_t> dcid_lengths;
  for (int i = 0; i < 200; ++i) {
    auto payload = fl::build_quic_payload(spec, rng);
    ASSERT_TRUE(payload.ok());
    EXPECT_EQ(payload->size(), 1200u);
    const Decrypted d = decrypt(*payload);
    EXPECT_EQ(d.header.type, common::LongPacketType::initial);
    EXPECT_EQ(d.header.version, 1u);
    EXPECT_TRUE(d.header.token.empty());
    EXPECT_EQ(d.packet.reserved_bits, 0);
    EXPECT_GE(d.header.dcid.size(), 8u);
    EXPECT_LE(d.header.dcid.size(), 20u);
    dcid_lengths.insert(d.header.dcid.size());
    expect_client_hello(d);
  }
  EXPECT_EQ(dcid_lengths.size(), 13u);  // every length 8..20 appears in 200 draws
}

TEST(FloodPacket, DcidsDiffer) {
  std::mt19937_64 rng(2);
  fl::QuicFloodSpec spec;
  std::set<std::vector<std::uint8_t>> seen;
  for (int i = 0; i < 100; ++i) {
    auto payload = fl::build_quic_payload(spec, rng);
    ASSERT_TRUE(payload.ok());
    auto header = common::parse_quic_header(*payload, 0);
    ASSERT_TRUE(header.ok());
    seen.emplace(header->dcid.begin(), header->dcid.end());
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(FloodPacket, ReplayCarriesTheCapturedToken) {
  std::mt19937_64 rng(3);
  fl::QuicFloodSpec spec;
  spec.variant = fl::FloodVariant::replay;
  spec.token.assign(77, 0xab);
  ASSERT_TRUE(fl::check_spec(spec).ok());
  auto payload = fl::build_quic_payload(spec, rng);
  ASSERT_TRUE(payload.ok());
  const Decrypted d = decrypt(*payload);
  EXPECT_EQ(std::vector<std::uint8_t>(d.header.token.begin(), d.header.token.end()), spec.token);
  expect_client_hello(d);
}

TEST(FloodPacket, ForgedTokensAreRandomAndOfTheAskedLength) {
  std::mt19937_64 rng(4);
  fl::QuicFloodSpec spec;
  spec.variant = fl::FloodVariant::forged;
  spec.forged_token_length = 300;
  auto a = fl::build_quic_payload(spec, rng);
  auto b = fl::build_quic_payload(spec, rng);
  ASSERT_TRUE(a.ok() && b.ok());
  const Decrypted da = decrypt(*a), db = decrypt(*b);
  ASSERT_EQ(da.header.token.size(), 300u);
  EXPECT_FALSE(std::equal(da.header.token.begin(), da.header.token.end(), db.header.token.begin()));
  expect_client_hello(da);
}

TEST(FloodPacket, GarbageParsesAsAnInitialButDoesNotDecrypt) {
  std::mt19937_64 rng(5);
  fl::QuicFloodSpec spec;
  spec.variant = fl::FloodVariant::garbage;
  for (int i = 0; i < 50; ++i) {
    auto payload = fl::build_quic_payload(spec, rng);
    ASSERT_TRUE(payload.ok());
    EXPECT_EQ(payload->size(), 1200u);
    auto header = common::parse_quic_header(*payload, 0);
    ASSERT_TRUE(header.ok());
    EXPECT_EQ(header->type, common::LongPacketType::initial);
    auto keys = common::derive_initial_keys(1, header->dcid, common::Perspective::client);
    ASSERT_TRUE(keys.ok());
    std::vector<std::uint8_t> out(header->packet.size());
    EXPECT_FALSE(common::decrypt_initial(*header, *keys, std::nullopt, out).ok());
  }
}

TEST(FloodPacket, SpecChecks) {
  fl::QuicFloodSpec spec;
  EXPECT_TRUE(fl::check_spec(spec).ok());
  spec.max_dcid_length = 21;
  EXPECT_FALSE(fl::check_spec(spec).ok());
  spec = {};
  spec.min_dcid_length = 9;
  spec.max_dcid_length = 8;
  EXPECT_FALSE(fl::check_spec(spec).ok());
  spec = {};
  spec.variant = fl::FloodVariant::replay;
  const auto checked = fl::check_spec(spec);
  EXPECT_FALSE(checked.ok());
  EXPECT_NE(checked.error().message.find("token"), std::string::npos);
  spec = {};
  spec.datagram_size = 1199;
  EXPECT_FALSE(fl::check_spec(spec).ok());
  EXPECT_FALSE(fl::parse_variant("flood").ok());
  EXPECT_EQ(*fl::parse_variant("syn"), fl::FloodVariant::syn);
}

fl::Endpoints endpoints(const char* src, const char* dst) {
  return {fl::parse_prefix(src)->base, fl::parse_prefix(dst)->base, 40000, 443};
}

TEST(FloodPacket, UdpFramingParsesWithValidChecksumsV4AndV6) {
  std::mt19937_64 rng(6);
  auto payload = fl::build_quic_payload({}, rng);
  ASSERT_TRUE(payload.ok());
  for (auto ends : {endpoints("198.18.232.7", "198.18.230.10"),
                    endpoints("2001:db8:232::7", "2001:db8:230::10")}) {
    const auto packet = fl::frame_udp(ends, *payload);
    auto ip = common::parse_ip_packet(packet);
    ASSERT_TRUE(ip.ok()) << common::to_string(ip.error());
    EXPECT_EQ(ip->src, ends.src);
    EXPECT_EQ(ip->dst, ends.dst);
    ASSERT_TRUE(ip->udp.has_value());
    EXPECT_EQ(ip->src_port, 40000);
    EXPECT_EQ(ip->dst_port, 443);
    EXPECT_TRUE(common::transport_checksum_valid(*ip));
    EXPECT_TRUE(std::equal(ip->payload.begin(), ip->payload.end(), payload->begin(),
                           payload->end()));
  }
}

TEST(FloodPacket, SynFramingParsesWithValidChecksumsV4AndV6) {
  for (auto ends : {endpoints("198.18.232.9", "198.18.230.10"),
                    endpoints("2001:db8:232::9", "2001:db8:230::10")}) {
    const auto packet = fl::frame_tcp_syn(ends, 0x12345678);
    auto ip = common::parse_ip_packet(packet);
    ASSERT_TRUE(ip.ok());
    ASSERT_TRUE(ip->tcp.has_value());
    EXPECT_EQ(ip->tcp->flags, common::tcp_flag::kSyn);
    EXPECT_EQ(ip->tcp->seq, 0x12345678u);
    EXPECT_EQ(ip->tcp->header_length(), 32u);
    EXPECT_TRUE(common::transport_checksum_valid(*ip));
  }
}

TEST(LabPrefix, RefusesEverythingOutsideTheLabRanges) {
  for (const char* inside : {"198.18.232.0/22", "198.19.255.255", "198.18.0.0/15",
                             "2001:db8:232::/64", "2001:db8::/32"}) {
    auto p = fl::parse_prefix(inside);
    ASSERT_TRUE(p.ok()) << inside;
    EXPECT_TRUE(fl::inside_lab(*p)) << inside;
  }
  for (const char* outside : {"198.18.0.0/14", "198.20.0.1", "10.0.0.0/8", "0.0.0.0/0",
                              "2001:db8::/31", "2001:db9::1", "::/0", "::1"}) {
    auto p = fl::parse_prefix(outside);
    ASSERT_TRUE(p.ok()) << outside;
    EXPECT_FALSE(fl::inside_lab(*p)) << outside;
  }
  for (const char* bad : {"198.18.0.0/33", "198.18.0.0/", "198.18.0.0/1x", "lab", "2001:db8::/129"}) {
    const auto parsed = fl::parse_prefix(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find(bad), std::string::npos);
  }
}

TEST(LabPrefix, RandomAddressesStayInsideThePrefix) {
  std::mt19937_64 rng(7);
  for (const char* text : {"198.18.232.0/22", "2001:db8:232::/64", "198.18.233.77/32"}) {
    const auto prefix = *fl::parse_prefix(text);
    std::set<std::string> seen;
    for (int i = 0; i < 500; ++i) {
      const auto a = fl::random_address(prefix, rng);
      const auto back = fl::parse_prefix(a.to_string() + "/" + std::to_string(prefix.length));
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(back->base, prefix.base) << a.to_string();
      seen.insert(a.to_string());
    }
    if (prefix.length < 32) {
      EXPECT_GT(seen.size(), 100u) << text;
    }
  }
}

}  // namespace
