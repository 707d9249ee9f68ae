// The classifier's flow lifecycle in simulated time: RTT estimate, move to native, the
// watchdog (confirm, fail back, late timers), the non-migrating cache, the hold, eviction,
// idle expiry, events, and hours of traffic run in microseconds.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "client/classifier.hpp"
#include "client_packets.hpp"

namespace quicstep::client {
namespace {

using namespace testing;  // NOLINT: the test packets
using namespace std::chrono_literals;
using common::Timestamp;

Timestamp at(Duration d) { return Timestamp{0} + d; }

FlowKey key4(std::uint16_t cport, const char* server = kServer4) {
  auto p = common::parse_ip_packet(out4(cport, short_header(), server));
  return FlowKey::from_client(*p);
}

std::vector<FlowEvent> drain(Classifier& c) {
  std::vector<FlowEvent> out(64);
  out.resize(c.drain_events(out));
  return out;
}

struct Harness {
  Classifier c;
  explicit Harness(Policy p = {}) : c(p) {}
  Decision out(std::uint16_t cport, const ByteVec& q, Duration t, const char* s = kServer4) {
    return c.classify(out4(cport, q, s), Direction::outbound, at(t));
  }
  Decision in(std::uint16_t cport, const ByteVec& q, Duration t, Direction d,
              const char* s = kServer4) {
    return c.classify(in4(cport, q, s), d, at(t));
  }
  // Initial at t0, server's Initial back on the channel at t0 + rtt.
  void handshake(std::uint16_t cport, Duration t0, Duration rtt, const char* s = kServer4) {
    EXPECT_EQ(out(cport, initial_v1(), t0, s).reason, Reason::quic_long_header);
    EXPECT_EQ(in(cport, initial_v1(), t0 + rtt, Direction::inbound_channel, s).reason,
              Reason::inbound);
  }
};

TEST(ClassifierFlow, MovesNativeAndConfirms) {
  Harness h;
  h.handshake(5000, 0ms, 40ms);
  EXPECT_EQ(h.c.find_flow(key4(5000))->rtt, 40ms);
  EXPECT_EQ(h.out(5000, handshake_v1(), 50ms).path, Path::channel);
  EXPECT_EQ(h.out(5000, short_header(), 60ms), (Decision{Path::native, Reason::quic_short_native}));
  EXPECT_TRUE(h.c.needs_inbound_watch(key4(5000)));
  auto ev = drain(h.c);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, FlowEvent::Kind::moved_native);
  EXPECT_EQ(ev[0].flow, key4(5000));
  // Bound: max(200 ms, 3 x 40 ms) after the move.
  EXPECT_EQ(h.c.next_expiry(), at(260ms));
  EXPECT_EQ(h.in(5000, short_header(), 100ms, Direction::inbound_native).reason,
            Reason::migration_confirmed);
  EXPECT_FALSE(h.c.needs_inbound_watch(key4(5000)));
  ev = drain(h.c);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, FlowEvent::Kind::confirmed);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::native_confirmed);
  h.c.on_expiry(at(10s));
  EXPECT_EQ(h.out(5000, short_header(), 10s).path, Path::native);
  EXPECT_EQ(h.c.counters().confirmed, 1u);
}

TEST(ClassifierFlow, WatchdogBoundFollowsRttWithinLimits) {
  Harness h;
  h.handshake(1, 0ms, 100ms);  // 3 x 100 ms = 300 ms
  (void)h.out(1, short_header(), 1s);
  EXPECT_EQ(h.c.find_flow(key4(1))->deadline, at(1300ms));
  h.handshake(2, 0ms, 5s);  // 15 s, capped at 3 s
  (void)h.out(2, short_header(), 6s);
  EXPECT_EQ(h.c.find_flow(key4(2))->deadline, at(9s));
  (void)h.out(3, short_header(), 0ms);  // no handshake seen: unknown_rtt 200 ms x 3
  EXPECT_EQ(h.c.find_flow(key4(3))->deadline, at(600ms));
}

TEST(ClassifierFlow, WatchdogFailsBackAndRemembersTheDestination) {
  Harness h;
  h.handshake(5000, 0ms, 10ms);
  EXPECT_EQ(h.out(5000, short_header(), 20ms).path, Path::native);
  const Timestamp deadline = h.c.next_expiry();
  EXPECT_EQ(deadline, at(220ms));
  h.c.on_expiry(Timestamp{deadline.ns - 1});
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::native_pending);
  (void)h.in(5000, short_header(), 100ms, Direction::inbound_channel);  // not native: no
  h.c.on_expiry(deadline);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::failed);
  EXPECT_EQ(h.out(5000, short_header(), 300ms),
            (Decision{Path::channel, Reason::migration_failed}));
  // Late native answers do not bring it back: the flow stays on the channel for good.
  (void)h.in(5000, short_header(), 310ms, Direction::inbound_native);
  EXPECT_EQ(h.out(5000, short_header(), 320ms).path, Path::channel);
  const auto ev = drain(h.c);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].kind, FlowEvent::Kind::failed_back);
  // A later flow to the same server:443 stays on the channel; another server does not.
  h.handshake(5001, 1s, 10ms);
  EXPECT_EQ(h.out(5001, short_header(), 2s),
            (Decision{Path::channel, Reason::destination_non_migrating}));
  EXPECT_EQ(h.c.find_flow(key4(5001))->state, FlowState::pinned_channel);
  EXPECT_EQ(h.out(5002, short_header(), 2s, "198.18.1.11").path, Path::native);
  EXPECT_EQ(h.c.counters().failed_back, 1u);
  EXPECT_EQ(h.c.counters().pinned_by_cache, 1u);
}

TEST(ClassifierFlow, LateTimerDecidesAsIfItHadFired) {
  Harness h;
  (void)h.out(7, short_header(), 0ms);
  EXPECT_EQ(h.out(7, short_header(), 599ms).path, Path::native);
  EXPECT_EQ(h.out(7, short_header(), 600ms).reason, Reason::migration_failed);
  Harness g;
  (void)g.out(8, short_header(), 0ms);
  EXPECT_EQ(g.in(8, short_header(), 700ms, Direction::inbound_native).reason, Reason::inbound);
  EXPECT_EQ(g.c.find_flow(key4(8))->state, FlowState::failed);
}

TEST(ClassifierFlow, CacheEntriesExpire) {
  Policy p;
  p.destinations.ttl = 1h;
  Harness h(p);
  (void)h.out(1, short_header(), 0ms);
  h.c.on_expiry(at(1s));
  EXPECT_EQ(h.out(2, short_header(), 2s).reason, Reason::destination_non_migrating);
  EXPECT_EQ(h.out(3, short_header(), 1h + 999ms).reason, Reason::destination_non_migrating);
  EXPECT_EQ(h.out(4, short_header(), 1h + 1s).reason, Reason::quic_short_native);
}

TEST(ClassifierFlow, PreloadedDestinationsStayOnTheChannel) {
  Harness h;
  auto list = parse_destination_list("198.18.1.10 no_migration\n");
  ASSERT_EQ(list.destinations.size(), 1u);
  h.c.destinations().add(list.destinations[0], NonMigratingReason::preloaded, at(0s));
  EXPECT_EQ(h.out(1, short_header(), 1s).reason, Reason::destination_non_migrating);
  EXPECT_EQ(h.out(2, short_header(), 1s, "198.18.1.11").reason, Reason::quic_short_native);
}

TEST(ClassifierFlow, HoldByCount) {
  Policy p;
  p.hold.packets = 3;
  Harness h(p);
  h.handshake(1, 0ms, 10ms);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.out(1, short_header(), 20ms), (Decision{Path::channel, Reason::hold}));
  }
  EXPECT_FALSE(h.c.needs_inbound_watch(key4(1)));
  EXPECT_EQ(h.out(1, short_header(), 30ms).path, Path::native);
  EXPECT_EQ(h.c.find_flow(key4(1))->deadline, at(230ms));  // from the move, not the start
}

TEST(ClassifierFlow, HoldByTime) {
  Policy p;
  p.hold.time = 500ms;
  Harness h(p);
  h.handshake(1, 0ms, 10ms);
  EXPECT_EQ(h.out(1, short_header(), 20ms).reason, Reason::hold);
  EXPECT_EQ(h.out(1, short_header(), 499ms).reason, Reason::hold);
  EXPECT_EQ(h.out(1, short_header(), 500ms).reason, Reason::quic_short_native);
}

TEST(ClassifierFlow, WatchdogDisabledConfirmsAtOnce) {
  Policy p;
  p.watchdog.enabled = false;
  Harness h(p);
  EXPECT_EQ(h.out(1, short_header(), 0ms).path, Path::native);
  EXPECT_FALSE(h.c.needs_inbound_watch(key4(1)));
  h.c.on_expiry(at(1h));
  EXPECT_EQ(h.c.counters().failed_back, 0u);
}

TEST(ClassifierFlow, EvictionIsBoundedAndUndoesTheWatchdog) {
  Policy p;
  p.flows.capacity = 16;
  Harness h(p);
  for (std::uint16_t port = 1; port <= 16; ++port) (void)h.out(port, short_header(), 0ms);
  EXPECT_EQ(h.c.flow_count(), 16u);
  (void)drain(h.c);
  (void)h.out(100, short_header(), 1s);  // evicts port 1, the least recently used
  EXPECT_EQ(h.c.flow_count(), 16u);
  EXPECT_EQ(h.c.find_flow(key4(1)), nullptr);
  EXPECT_EQ(h.c.counters().flows_evicted, 1u);
  EXPECT_EQ(h.c.counters().pending_forgotten, 1u);
  const auto ev = drain(h.c);
  ASSERT_GE(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, FlowEvent::Kind::forgotten);
  EXPECT_EQ(ev[0].flow, key4(1));
  h.c.on_expiry(at(1s));  // 15 remaining timers fire; the evicted one is gone
  EXPECT_EQ(h.c.counters().failed_back, 15u);
  EXPECT_EQ(h.c.next_expiry(), at(1600ms));  // port 100's own deadline
}

TEST(ClassifierFlow, IdleFlowsAreForgotten) {
  Policy p;
  p.flows.idle_timeout = 30s;
  p.watchdog.enabled = false;
  Harness h(p);
  (void)h.out(1, initial_v1(), 0s);  // never announced: forgotten silently
  (void)h.out(2, short_header(), 0s);
  (void)h.out(2, short_header(), 20s);
  EXPECT_EQ(h.c.next_expiry(), at(30s));
  h.c.on_expiry(at(30s));
  EXPECT_EQ(h.c.find_flow(key4(1)), nullptr);
  EXPECT_NE(h.c.find_flow(key4(2)), nullptr);
  h.c.on_expiry(at(49s));
  EXPECT_NE(h.c.find_flow(key4(2)), nullptr);
  h.c.on_expiry(at(50s));
  EXPECT_EQ(h.c.flow_count(), 0u);
  EXPECT_EQ(h.c.counters().flows_expired, 2u);
  const auto ev = drain(h.c);
  ASSERT_EQ(ev.size(), 2u);  // confirmed, forgotten (flow 2 only)
  EXPECT_EQ(ev[1].kind, FlowEvent::Kind::forgotten);
}

TEST(ClassifierFlow, EventQueueOverflowIsCounted) {
  Policy p;
  p.event_capacity = 16;
  Harness h(p);
  for (std::uint16_t port = 1; port <= 20; ++port) (void)h.out(port, short_header(), 0ms);
  EXPECT_EQ(h.c.pending_events(), 16u);
  EXPECT_EQ(h.c.counters().events_lost, 4u);
  EXPECT_EQ(drain(h.c).size(), 16u);
}

TEST(ClassifierFlow, Ipv6Lifecycle) {
  Harness h;
  const auto dir_out = Direction::outbound;
  (void)h.c.classify(out6(9, initial_v1()), dir_out, at(0ms));
  (void)h.c.classify(in6(9, initial_v1()), Direction::inbound_channel, at(30ms));
  EXPECT_EQ(h.c.classify(out6(9, short_header()), dir_out, at(40ms)).path, Path::native);
  EXPECT_EQ(h.c.classify(in6(9, short_header()), Direction::inbound_native, at(50ms)).reason,
            Reason::migration_confirmed);
}

TEST(ClassifierFlow, SnapshotIsBoundedAndNewestFirst) {
  Harness h;
  for (std::uint16_t port = 1; port <= 10; ++port) {
    (void)h.out(port, short_header(), Duration(std::chrono::seconds(port)));
  }
  const auto flows = h.c.flows(3);
  ASSERT_EQ(flows.size(), 3u);
  EXPECT_EQ(flows[0].key, key4(10));
  EXPECT_EQ(flows[2].key, key4(8));
  EXPECT_EQ(flows[0].entry.native_packets, 1u);
}

// Three hours of simulated traffic: flows come and go, a third of the servers never answer
// on the native path. State stays bounded and every decision keeps to the invariants.
TEST(ClassifierFlow, HoursOfSimulatedTime) {
  Policy p;
  p.flows.capacity = 512;
  p.flows.idle_timeout = 30s;
  p.destinations.capacity = 64;
  p.destinations.ttl = 10min;
  Harness h(p);
  const char* servers[] = {"198.18.1.1", "198.18.1.2", "198.18.1.3", "198.18.1.4",
                           "198.18.1.5", "198.18.1.6"};
  std::vector<FlowEvent> events(256);
  std::uint64_t native_from_dead = 0;
  Duration t = 0s;
  for (int i = 0; t < 3h; ++i, t += 500ms) {
    const auto port = static_cast<std::uint16_t>(1024 + i % 200);
    const char* server = servers[i % 6];
    const bool dead = i % 6 < 2;  // 198.18.1.1 and .2 ignore the new path
    if (i % 10 == 0) h.handshake(port, t, 20ms, server);
    const Decision d = h.out(port, short_header(), t + 30ms, server);
    if (d.path == Path::native && !dead) {
      (void)h.in(port, short_header(), t + 40ms, Direction::inbound_native, server);
    }
    if (d.path == Path::native && dead) ++native_from_dead;
    while (h.c.next_expiry() <= at(t + 45ms)) h.c.on_expiry(h.c.next_expiry());
    while (h.c.drain_events(events) > 0) {
    }
    ASSERT_LE(h.c.flow_count(), 512u);
    ASSERT_LE(h.c.destinations().size(), 64u);
  }
  const Counters& k = h.c.counters();
  EXPECT_GT(k.confirmed, 0u);
  EXPECT_GT(k.failed_back, 0u);
  EXPECT_GT(k.pinned_by_cache, 0u);
  EXPECT_GT(k.flows_expired, 0u);
  // Dead servers are learnt once per cache lifetime, so most of their packets stay off the
  // native path (only the short window before each failure goes native).
  EXPECT_LT(native_from_dead, k.outbound[static_cast<int>(Path::channel)].packets / 10);
  EXPECT_EQ(k.events_lost, 0u);
}

}  // namespace
}  // namespace quicstep::client
