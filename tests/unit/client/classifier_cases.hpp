// The classifier's outbound decision table under the default Policy: {name, packet built
// with the fluent builder, expected decision}. Shared by the classifier tests and the
// kernel-rules tests, which check that the nftables rules and the classifier agree.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "client/core/classifier.hpp"
#include "client_packets.hpp"
#include "unit/common/quic_test_vectors.hpp"

namespace quicstep::client::core::testing {

struct ClassifierCase {
  std::string name;
  ByteVec packet;
  Decision expected;
};

// gtest prints a failing case by its name, not its bytes.
inline void PrintTo(const ClassifierCase& c, std::ostream* os) { *os << c.name; }

inline constexpr Decision kChannel(Reason r) { return {Path::channel, r}; }
inline constexpr Decision kNative(Reason r) { return {Path::native, r}; }

// A DNS query header (id 0x1234, RD, one question) and a question for "a." type A.
inline ByteVec dns_query() {
  return {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
          0x01, 'a',  0x00, 0x00, 0x01, 0x00, 0x01};
}

inline std::vector<ClassifierCase> outbound_cases() {
  const auto v1_initial = quicstep::testing::from_hex(quicstep::testing::kV1ClientInitial);
  const auto v2_initial = quicstep::testing::from_hex(quicstep::testing::kV2ClientInitial);
  const ByteVec short_hdr = short_header();
  return {
      {"dns_udp4", udp4(40000, 53, dns_query()), kChannel(Reason::dns)},
      {"dns_udp6", udp6(40000, 53, dns_query()), kChannel(Reason::dns)},
      {"dns_udp4_from_53", udp4(53, 40000, dns_query()), kChannel(Reason::dns)},
      {"dns_tcp4", PacketBuilder().ipv4(kClient4, kServer4).tcp(40000, 53).flags(test::tcp::kAck)
                       .payload(dns_query()).build(), kChannel(Reason::dns)},
      {"tcp4_syn_443", PacketBuilder().ipv4(kClient4, kServer4).tcp(40000, 443)
                           .flags(test::tcp::kSyn).build(), kChannel(Reason::tcp)},
      {"tcp6_data_443", PacketBuilder().ipv6(kClient6, kServer6).tcp(40000, 443)
                            .flags(test::tcp::kAck).payload(short_hdr).build(),
       kChannel(Reason::tcp)},
      {"rfc9001_initial_v1", out4(40000, v1_initial), kChannel(Reason::quic_long_header)},
      {"rfc9369_initial_v2", out4(40001, v2_initial), kChannel(Reason::quic_long_header)},
      {"initial_v1_ipv6", out6(40000, initial_v1()), kChannel(Reason::quic_long_header)},
      {"initial_v2_ipv6", out6(40001, initial_v2()), kChannel(Reason::quic_long_header)},
      {"handshake_v1", out4(40002, handshake_v1()), kChannel(Reason::quic_long_header)},
      {"handshake_v2", out4(40003, handshake_v2()), kChannel(Reason::quic_long_header)},
      {"zero_rtt_v1", out4(40004, zero_rtt_v1()), kChannel(Reason::quic_long_header)},
      {"retry_v1", out4(40005, retry_v1()), kChannel(Reason::quic_long_header)},
      {"version_negotiation", out4(40006, version_negotiation()),
       kChannel(Reason::quic_long_header)},
      {"greased_fixed_bit_long", out4(40007, greased_long()), kChannel(Reason::quic_long_header)},
      {"unknown_version_long", out6(40008, unknown_version_long()),
       kChannel(Reason::quic_long_header)},
      {"long_header_first_byte_only", out4(40009, ByteVec{0xc0}),
       kChannel(Reason::quic_long_header)},
      {"empty_udp_443", out4(40010, ByteVec{}), kChannel(Reason::quic_unparseable)},
      {"tiny_short_443", out4(40011, short_header(20)), kChannel(Reason::quic_unparseable)},
      {"truncated_udp_length", PacketBuilder().ipv4(kClient4, kServer4).udp(40012, 443)
                                   .payload(short_hdr).udp_length(200).build(),
       kChannel(Reason::not_ip)},
      {"udp_header_cut", PacketBuilder().ipv4(kClient4, kServer4).protocol(17)
                             .payload(ByteVec{0x9c, 0x40, 0x01}).build(),
       kChannel(Reason::not_ip)},
      {"ipv4_first_fragment_443", PacketBuilder().ipv4(kClient4, kServer4).fragment(0, true, 9)
                                      .udp(40013, 443).payload(short_hdr).build(),
       kChannel(Reason::fragment)},
      {"ipv4_later_fragment_udp", PacketBuilder().ipv4(kClient4, kServer4).fragment(185, false, 9)
                                      .protocol(17).payload(short_hdr).build(),
       kChannel(Reason::fragment)},
      {"ipv6_first_fragment_443", PacketBuilder().ipv6(kClient6, kServer6).fragment(0, true, 9)
                                      .udp(40014, 443).payload(short_hdr).build(),
       kChannel(Reason::fragment)},
      {"ipv6_later_fragment_udp", PacketBuilder().ipv6(kClient6, kServer6).fragment(185, false, 9)
                                      .protocol(17).payload(short_hdr).build(),
       kChannel(Reason::fragment)},
      {"ipv4_later_fragment_tcp", PacketBuilder().ipv4(kClient4, kServer4).fragment(3, false, 9)
                                      .protocol(6).payload(short_hdr).build(),
       kChannel(Reason::fragment)},
      {"garbage", ByteVec{0x13, 0x37, 0xde, 0xad, 0xbe, 0xef}, kChannel(Reason::not_ip)},
      {"empty", ByteVec{}, kChannel(Reason::not_ip)},
      {"ipv4_cut_header", ByteVec(short_hdr.begin(), short_hdr.begin() + 10),
       kChannel(Reason::not_ip)},
      {"short_443_v4", out4(41000, short_hdr), kNative(Reason::quic_short_native)},
      {"short_443_v6", out6(41001, short_hdr), kNative(Reason::quic_short_native)},
      {"short_443_greased_fixed_bit", out4(41002, short_header(60, 0x01)),
       kNative(Reason::quic_short_native)},
      {"short_8443_other_udp", udp4(41003, 8443, short_hdr), kNative(Reason::other_udp)},
      {"long_8443_other_udp", udp4(41004, 8443, initial_v1()), kNative(Reason::other_udp)},
      {"short_from_443_to_high_port", udp4(443, 41005, short_hdr), kNative(Reason::other_udp)},
      {"icmp", PacketBuilder().ipv4(kClient4, kServer4).protocol(1).payload(short_hdr).build(),
       kNative(Reason::other_protocol)},
  };
}

}  // namespace quicstep::client::core::testing
