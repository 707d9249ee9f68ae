// The classifier's stateless decisions, table-driven over the fluent builder, and invariant 1
// as a property over mutated packets: `native` only for a UDP datagram to a QUIC port whose
// first payload byte has the long-header bit clear.
#include "client/core/classifier.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "classifier_cases.hpp"
#include "client_packets.hpp"

namespace quicstep::client::core {
namespace {

using namespace testing;  // NOLINT: the test packets
using common::Timestamp;
using test::PacketBuilder;

class ClassifierTable : public ::testing::TestWithParam<ClassifierCase> {};

TEST_P(ClassifierTable, OutboundDecision) {
  Classifier c{Policy{}};
  const ClassifierCase& tc = GetParam();
  const Decision d = c.classify(tc.packet, Direction::outbound, Timestamp{1'000'000});
  EXPECT_EQ(to_string(d.path), to_string(tc.expected.path));
  EXPECT_EQ(to_string(d.reason), to_string(tc.expected.reason));
}

INSTANTIATE_TEST_SUITE_P(Default, ClassifierTable, ::testing::ValuesIn(outbound_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Classifier, StrictPolicySendsOtherTrafficToTheChannel) {
  Policy p;
  p.other_udp = Route::channel;
  p.other_protocols = Route::channel;
  Classifier c{p};
  for (const ClassifierCase& tc : outbound_cases()) {
    const Decision d = c.classify(tc.packet, Direction::outbound, Timestamp{1});
    if (tc.expected.reason == Reason::quic_short_native) {
      EXPECT_EQ(d.path, Path::native) << tc.name;
    } else {
      EXPECT_EQ(d.path, Path::channel) << tc.name;
    }
  }
}

TEST(Classifier, InboundIsAlwaysAccepted) {
  Classifier c{Policy{}};
  for (const ClassifierCase& tc : outbound_cases()) {
    for (auto dir : {Direction::inbound_native, Direction::inbound_channel}) {
      EXPECT_EQ(c.classify(tc.packet, dir, Timestamp{1}).path, Path::native) << tc.name;
    }
  }
}

TEST(Classifier, ConfiguredPortsOnly) {
  Policy p;
  p.quic_ports = {8443, 853};
  Classifier c{p};
  EXPECT_EQ(c.classify(udp4(1, 8443, short_header()), Direction::outbound, Timestamp{}).reason,
            Reason::quic_short_native);
  EXPECT_EQ(c.classify(udp4(1, 853, initial_v1()), Direction::outbound, Timestamp{}).reason,
            Reason::quic_long_header);
  EXPECT_EQ(c.classify(udp4(1, 443, short_header()), Direction::outbound, Timestamp{}).reason,
            Reason::other_udp);
  EXPECT_TRUE(c.is_quic_port(853));
  EXPECT_FALSE(c.is_quic_port(443));
}

TEST(Classifier, DnsAndTcpSwitches) {
  Policy p;
  p.tcp_to_channel = false;
  Classifier c{p};
  const auto syn = PacketBuilder().ipv4(kClient4, kServer4).tcp(1, 443).flags(test::tcp::kSyn)
                       .build();
  const auto dns_tcp = PacketBuilder().ipv4(kClient4, kServer4).tcp(1, 53).build();
  EXPECT_EQ(c.classify(syn, Direction::outbound, Timestamp{}), kNative(Reason::tcp));
  EXPECT_EQ(c.classify(dns_tcp, Direction::outbound, Timestamp{}), kChannel(Reason::dns));
}

TEST(Classifier, CountsPathsAndReasons) {
  Classifier c{Policy{}};
  const auto dns = udp4(1, 53, dns_query());
  const auto shrt = out4(2, short_header());
  (void)c.classify(dns, Direction::outbound, Timestamp{});
  (void)c.classify(shrt, Direction::outbound, Timestamp{});
  (void)c.classify(in4(2, short_header()), Direction::inbound_native, Timestamp{});
  const Counters& k = c.counters();
  EXPECT_EQ(k.outbound[static_cast<int>(Path::channel)].packets, 1u);
  EXPECT_EQ(k.outbound[static_cast<int>(Path::channel)].bytes, dns.size());
  EXPECT_EQ(k.outbound[static_cast<int>(Path::native)].bytes, shrt.size());
  EXPECT_EQ(k.inbound_native.packets, 1u);
  EXPECT_EQ(k.reasons[static_cast<int>(Reason::dns)], 1u);
  EXPECT_EQ(k.reasons[static_cast<int>(Reason::migration_confirmed)], 1u);
  for (std::size_t r = 0; r < kReasonCount; ++r) {
    EXPECT_NE(to_string(static_cast<Reason>(r)), "?");
  }
}

// --- Invariant 1 as a property. ---

bool is_quic_short_on_quic_port(const Classifier& c, const ByteVec& bytes) {
  auto p = common::parse_ip_packet(bytes);
  return p && p->protocol == common::kIpProtoUdp && p->udp && !p->is_fragment &&
         c.is_quic_port(p->dst_port) && !p->payload.empty() && (p->payload[0] & 0x80) == 0;
}

// Never native for TCP, DNS, UDP fragments, unparseable packets or QUIC long headers.
bool may_be_native_by_default(const Classifier& c, const ByteVec& bytes) {
  if (is_quic_short_on_quic_port(c, bytes)) return true;
  auto p = common::parse_ip_packet(bytes);
  if (!p || p->protocol == common::kIpProtoTcp) return false;
  if (p->protocol != common::kIpProtoUdp) return true;
  return !p->is_fragment && p->src_port != 53 && p->dst_port != 53 && !c.is_quic_port(p->dst_port);
}

ByteVec mutate(ByteVec p, std::mt19937& rng) {
  switch (rng() % 4) {
    case 0:
      if (!p.empty()) p[rng() % p.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      break;
    case 1:
      if (!p.empty()) p.resize(rng() % p.size());
      break;
    case 2:
      if (!p.empty()) p[rng() % p.size()] = static_cast<std::uint8_t>(rng());
      break;
    default:
      for (int i = 0; i < 4 && !p.empty(); ++i) p[rng() % std::min<std::size_t>(p.size(), 48)] =
                                                     static_cast<std::uint8_t>(rng());
  }
  return p;
}

TEST(ClassifierProperty, NativeOnlyForShortHeadersOnQuicPorts) {
  Policy strict;
  strict.other_udp = Route::channel;
  strict.other_protocols = Route::channel;
  strict.flows.capacity = 64;
  Classifier s{strict};
  Classifier d{Policy{}};
  std::mt19937 rng(42);
  const auto cases = outbound_cases();
  std::int64_t t = 0;
  for (int i = 0; i < 200'000; ++i) {
    ByteVec pkt = mutate(cases[rng() % cases.size()].packet, rng);
    if (rng() % 3 == 0) pkt = mutate(std::move(pkt), rng);
    const auto dir = static_cast<Direction>(rng() % 3);
    t += 1'000'000;
    const Decision ds = s.classify(pkt, dir, Timestamp{t});
    const Decision dd = d.classify(pkt, dir, Timestamp{t});
    if (i % 1000 == 0) s.on_expiry(Timestamp{t});
    if (dir != Direction::outbound) continue;
    if (ds.path == Path::native) {
      ASSERT_TRUE(is_quic_short_on_quic_port(s, pkt)) << i;
    }
    if (dd.path == Path::native) {
      ASSERT_TRUE(may_be_native_by_default(d, pkt)) << i;
    }
    ASSERT_NE(ds.path, Path::drop);
  }
}

}  // namespace
}  // namespace quicstep::client::core
