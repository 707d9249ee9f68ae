// The censor's state in simulated time: residual blocking, probability, strict modes, bounds.
#include <gtest/gtest.h>

#include "censor_packets.hpp"
#include "lab/censor/censor_core.hpp"
#include "lab/censor/residual_blocks.hpp"

namespace quicstep::censor {
namespace {

using namespace testing;

CensorCore make_core(CensorConfig config = {}, std::uint64_t seed = 1) {
  Blocklist list;
  list.load(".blocked.test\n");
  return CensorCore(std::move(config), std::move(list), seed);
}

// After a block, the (client IP, server IP, 443) triple stays blocked for 180 s whatever the
// client port and whatever the SNI; then it is free again.
TEST(CensorState, ResidualBlockingLastsItsPeriod) {
  auto core = make_core();
  ASSERT_EQ(core.decide(quic_initial("blocked.test", 40000), at_s(0)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40001, false, 0x22), at_s(1)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_short(40002, false), at_s(2)).action, Action::drop);  // server side
  EXPECT_EQ(core.decide(tcp_syn(40003), at_s(3)).action, Action::pass);  // another protocol
  EXPECT_EQ(core.decide(quic_initial("open.test", 40004, false, 0x33), at_s(179.9)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40005, false, 0x44), at_s(180.1)).action, Action::pass);
  EXPECT_EQ(core.counters().residual_blocks, 3u);
  auto log = core.take_decisions();
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[1].rule, Rule::residual);
  EXPECT_EQ(log[1].flow.client_port, 40001);
}

TEST(CensorState, ResidualCanBeTurnedOff) {
  CensorConfig config;
  config.residual_period = common::Duration::zero();
  auto core = make_core(config);
  ASSERT_EQ(core.decide(quic_initial("blocked.test", 40000), at_s(0)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40001, false, 0x22), at_s(1)).action, Action::pass);
  EXPECT_EQ(core.residual_count(), 0u);
}

TEST(CensorState, TcpBlocksAlsoLeaveResidualBlocks) {
  auto core = make_core();
  core.decide(tcp_syn(41000), at_s(0));
  ASSERT_EQ(core.decide(tcp_hello("blocked.test", 41000), at_s(0)).action, Action::drop_and_inject);
  EXPECT_EQ(core.decide(tcp_syn(41001), at_s(10)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40000), at_s(10)).action, Action::pass);
}

TEST(ResidualBlocks, BoundedOldestEvictedAndNextExpiry) {
  ResidualBlocks r(2, std::chrono::seconds(10));
  auto key = [](std::uint8_t last) {
    ResidualKey k;
    k.protocol = 17;
    k.client = common::IpAddress::v4({198, 18, 1, last});
    k.server = common::IpAddress::v4({198, 18, 10, 11});
    k.server_port = 443;
    return k;
  };
  EXPECT_FALSE(r.next_expiry());
  r.block(key(1), at_s(0));
  r.block(key(2), at_s(1));
  r.block(key(3), at_s(2));
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.evicted(), 1u);
  EXPECT_FALSE(r.blocked(key(1), at_s(2)));
  EXPECT_EQ(*r.next_expiry(), at_s(11));
  r.block(key(2), at_s(5));  // extends, and moves behind key 3
  EXPECT_EQ(*r.next_expiry(), at_s(12));
  EXPECT_TRUE(r.blocked(key(2), at_s(14)));
  EXPECT_FALSE(r.blocked(key(3), at_s(14)));
  EXPECT_FALSE(r.blocked(key(2), at_s(15)));
  EXPECT_EQ(r.size(), 0u);
}

// With probability p, about p of the matching flows are blocked; the rest are spared (and
// logged as such). Seeded: the same seed gives the same decisions.
TEST(CensorState, ProbabilityPerFlow) {
  CensorConfig config;
  config.block_probability = 0.3;
  config.residual_period = common::Duration::zero();
  auto run = [&](std::uint64_t seed) {
    auto core = make_core(config, seed);
    std::vector<bool> blocked;
    for (std::uint16_t i = 0; i < 400; ++i) {
      const auto port = static_cast<std::uint16_t>(20000 + i);
      const bool drop = core.decide(quic_initial("blocked.test", port), at_s(i)).action == Action::drop;
      // Later packets of the flow follow its decision.
      EXPECT_EQ(core.decide(quic_short(port), at_s(i + 0.5)).action == Action::drop, drop);
      blocked.push_back(drop);
    }
    EXPECT_EQ(core.counters().quic_sni_blocks + core.counters().spared, 400u);
    return blocked;
  };
  const auto a = run(7);
  const auto n = std::count(a.begin(), a.end(), true);
  EXPECT_GT(n, 80);  // 120 expected; binomial sd ~9
  EXPECT_LT(n, 160);
  EXPECT_EQ(run(7), a);
  EXPECT_NE(run(8), a);
}

TEST(CensorState, ProbabilityZeroNeverBlocks) {
  CensorConfig config;
  config.block_probability = 0;
  auto core = make_core(config);
  EXPECT_EQ(core.decide(quic_initial("blocked.test", 40000), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.take_decisions()[0].rule, Rule::spared);
}

TEST(CensorState, StrictAllQuicBlocksEveryQuicFlowButNotOtherUdp) {
  CensorConfig config;
  config.block_all_quic = true;
  auto core = make_core(config);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40000), at_s(0)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_short(40001), at_s(0)).action, Action::drop);
  const auto wg = test::PacketBuilder().ipv4(kClient4, "198.18.3.2").udp(40000, 51820).payload("wireguard").build();
  EXPECT_EQ(core.decide(wg, at_s(0)).action, Action::pass);
  EXPECT_EQ(core.decide(tcp_syn(41000), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.counters().strict_blocks, 2u);
  EXPECT_EQ(core.residual_count(), 0u);  // strict modes block flows, not triples
}

// A flow whose first packet seen is a short header (a migrated flow) is blocked; a flow
// that started with an Initial goes on to short headers unharmed.
TEST(CensorState, StrictShortHeaderBlocksFlowsWithoutInitial) {
  CensorConfig config;
  config.block_short_header_first = true;
  auto core = make_core(config);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40000), at_s(0)).action, Action::pass);
  EXPECT_EQ(core.decide(quic_short(40000), at_s(0.1)).action, Action::pass);
  EXPECT_EQ(core.decide(quic_short(40000, false), at_s(0.1)).action, Action::pass);
  EXPECT_EQ(core.decide(quic_short(40001), at_s(0.2)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_short(40001, false), at_s(0.3)).action, Action::drop);
  EXPECT_EQ(core.decide(quic_short(40002, false), at_s(0.4)).action, Action::drop);  // server first
  auto log = core.take_decisions();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].rule, Rule::strict_short_header);
}

TEST(CensorState, QuicPortsAreConfigurable) {
  CensorConfig config;
  config.block_all_quic = true;
  config.quic_ports = {8443};
  auto core = make_core(config);
  EXPECT_EQ(core.decide(quic_initial("open.test", 40000), at_s(0)).action, Action::pass);
  const auto p = test::PacketBuilder().ipv4(kClient4, kServer4).udp(40001, 8443).payload("x").build();
  EXPECT_EQ(core.decide(p, at_s(0)).action, Action::drop);
}

TEST(CensorState, FlowsAreBoundedAndExpire) {
  CensorConfig config;
  config.max_flows = 16;
  config.flow_idle_timeout = std::chrono::seconds(5);
  config.max_pending_decisions = 4;
  auto core = make_core(config);
  for (std::uint16_t i = 0; i < 100; ++i) core.decide(quic_short(static_cast<std::uint16_t>(30000 + i)), at_s(0));
  EXPECT_EQ(core.flow_count(), 16u);
  EXPECT_EQ(core.counters().flows_evicted, 84u);
  core.on_expiry(at_s(6));
  EXPECT_EQ(core.flow_count(), 0u);
  for (std::uint16_t i = 0; i < 10; ++i) {
    core.decide(quic_initial("blocked.test", static_cast<std::uint16_t>(20000 + i)), at_s(10 + i));
  }
  EXPECT_EQ(core.take_decisions().size(), 4u);
  EXPECT_EQ(core.counters().decisions_lost, 6u);
}

TEST(CensorState, GarbageIsPassedAndCounted) {
  auto core = make_core();
  const std::vector<std::uint8_t> junk{0x45, 0x00, 0x00};
  EXPECT_EQ(core.decide(junk, at_s(0)).action, Action::pass);
  EXPECT_EQ(core.decide({}, at_s(0)).action, Action::pass);
  EXPECT_EQ(core.counters().unparsed, 2u);
  // Every truncation of a blocked Initial: never a crash, never an injection.
  const auto initial = quic_initial("blocked.test", 40000);
  CensorConfig small;
  small.max_flows = 4;
  small.max_residual = 4;
  for (std::size_t n = 0; n < initial.size(); ++n) {
    auto fresh = make_core(small);
    EXPECT_TRUE(fresh.decide(common::Bytes(initial).first(n), at_s(0)).inject.empty());
  }
}

}  // namespace
}  // namespace quicstep::censor
