// The classifier's flow lifecycle in simulated time: RTT estimate, move to native, the
// watchdog (confirm, fail back, late timers), the non-migrating cache, the hold, eviction,
// idle expiry, events, and hours of traffic run in microseconds.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "client/core/classifier.hpp"
#include "client_packets.hpp"

namespace quicstep::client::core {
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
  // Native, not before the native switch's end: 50% of the RTT after the Finished.
  EXPECT_EQ(h.out(5000, short_header(), 60ms),
            (Decision{Path::native, Reason::quic_short_native, at(70ms)}));
  EXPECT_TRUE(h.c.needs_inbound_watch(key4(5000)));
  auto ev = drain(h.c);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, FlowEvent::Kind::moved_native);
  EXPECT_EQ(ev[0].flow, key4(5000));
  // Bound: max(200 ms, 3 x 40 ms) after the switch's end.
  EXPECT_EQ(h.c.next_expiry(), at(270ms));
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
  EXPECT_EQ(h.out(5000, short_header(), 21ms).path, Path::native);  // evidence: 3 packets
  EXPECT_EQ(h.out(5000, short_header(), 22ms).path, Path::native);
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
  for (int i = 0; i < 3; ++i) (void)g.out(8, short_header(), 0ms);
  EXPECT_EQ(g.in(8, short_header(), 700ms, Direction::inbound_native).reason, Reason::inbound);
  EXPECT_EQ(g.c.find_flow(key4(8))->state, FlowState::failed);
  // Without the evidence (one packet), a late answer confirms: nothing was judged.
  (void)g.out(9, short_header(), 0ms, "198.18.1.11");
  EXPECT_EQ(g.in(9, short_header(), 700ms, Direction::inbound_native, "198.18.1.11").reason,
            Reason::migration_confirmed);
  EXPECT_EQ(g.c.find_flow(key4(9, "198.18.1.11"))->state, FlowState::native_confirmed);
}

TEST(ClassifierFlow, CacheEntriesExpire) {
  Policy p;
  p.destinations.ttl = 1h;
  p.destinations.first_penalty = 1h;   // no escalation here (see DestinationCache tests)
  p.watchdog.min_unanswered_packets = 1;  // the old rule: one unanswered packet fails
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
  p.watchdog.min_unanswered_packets = 1;
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
    // A few packets each time (a request and its ACKs): the watchdog's evidence.
    Decision d = h.out(port, short_header(), t + 30ms, server);
    (void)h.out(port, short_header(), t + 31ms, server);
    (void)h.out(port, short_header(), t + 32ms, server);
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

// The page-load report: a 10 KB page finished during a 100 ms hold; the flow's one trailing
// packet went native and the server (with nothing to say) sent nothing there. Not evidence:
// the destination must not be blocked, and later flows to it still move.
TEST(ClassifierWatchdog, TransferFinishedDuringTheHoldIsNotJudged) {
  Policy p;
  p.hold.time = 100ms;
  Harness h(p);
  h.handshake(6000, 0ms, 20ms);
  for (Duration t = 25ms; t < 100ms; t += 5ms) {  // the whole transfer, held
    EXPECT_EQ(h.out(6000, short_header(), t).reason, Reason::hold);
    (void)h.in(6000, short_header(), t + 1ms, Direction::inbound_channel);
  }
  EXPECT_EQ(h.out(6000, short_header(), 120ms).path, Path::native);  // a trailing ACK
  const Timestamp deadline = h.c.find_flow(key4(6000))->deadline;
  EXPECT_EQ(deadline, at(320ms));
  EXPECT_EQ(h.c.next_expiry(), deadline);
  h.c.on_expiry(deadline);
  EXPECT_EQ(h.c.find_flow(key4(6000))->state, FlowState::native_pending);
  EXPECT_EQ(h.c.counters().failed_back, 0u);
  EXPECT_EQ(h.c.counters().quiet_at_bound, 1u);
  EXPECT_EQ(h.c.destinations().size(), 0u);
  EXPECT_GT(h.c.next_expiry(), at(100s));  // no timer left for it (only idle expiry)
  // Seconds later, a CONNECTION_CLOSE: two packets in all, still no evidence.
  EXPECT_EQ(h.out(6000, short_header(), 5s).path, Path::native);
  EXPECT_EQ(h.c.counters().failed_back, 0u);
  // The next loads of the round: new flows to the same server move native (after the hold).
  for (std::uint16_t port = 6001; port <= 6004; ++port) {
    h.handshake(port, 6s, 20ms);
    EXPECT_EQ(h.out(port, short_header(), 6s + 150ms),
              (Decision{Path::native, Reason::quic_short_native}));
    EXPECT_EQ(h.in(port, short_header(), 6s + 170ms, Direction::inbound_native).reason,
              Reason::migration_confirmed);
  }
  // The quiet flow, reused, gets its answer: confirmed.
  EXPECT_EQ(h.in(6000, short_header(), 7s, Direction::inbound_native).reason,
            Reason::migration_confirmed);
}

// A server that ignores packets from the new address, while the client keeps sending (ACKs
// of data still arriving on the channel): failed exactly at the bound.
TEST(ClassifierWatchdog, IgnoredPathFailsAtTheBound) {
  Harness h;
  h.handshake(6100, 0ms, 30ms);
  for (Duration t = 40ms; t < 130ms; t += 10ms) {
    EXPECT_EQ(h.out(6100, short_header(), t).path, Path::native);
  }
  const Timestamp deadline = at(240ms);  // 40 ms + max(3 x 30 ms, min_timeout 200 ms)
  EXPECT_EQ(h.c.next_expiry(), deadline);
  h.c.on_expiry(deadline);
  EXPECT_EQ(h.c.find_flow(key4(6100))->state, FlowState::failed);
  EXPECT_EQ(h.c.counters().failed_back, 1u);
  EXPECT_EQ(h.out(6100, short_header(), 250ms).reason, Reason::migration_failed);
  h.handshake(6101, 1s, 30ms);
  EXPECT_EQ(h.out(6101, short_header(), 1100ms).reason, Reason::destination_non_migrating);
}

// The same server, with a client that has little to send: one request, then PTO probes
// with exponential backoff. Quiet at the bound (two packets), failed by the packet that
// completes the evidence, which goes to the channel (the server still knows that address).
TEST(ClassifierWatchdog, IgnoredPathWithProbesFailsOnTheThirdPacket) {
  Harness h;
  h.handshake(6200, 0ms, 100ms);  // bound: 3 x 100 ms
  EXPECT_EQ(h.out(6200, short_header(), 110ms).path, Path::native);  // the request
  EXPECT_EQ(h.out(6200, short_header(), 260ms).path, Path::native);  // PTO 1 (~1.5 RTT)
  h.c.on_expiry(at(410ms));
  EXPECT_EQ(h.c.find_flow(key4(6200))->state, FlowState::native_pending);
  EXPECT_EQ(h.out(6200, short_header(), 560ms),  // PTO 2 (backed off)
            (Decision{Path::channel, Reason::migration_failed}));
  EXPECT_EQ(h.c.find_flow(key4(6200))->state, FlowState::failed);
  EXPECT_EQ(h.c.counters().failed_back, 1u);
}

// A server that keeps answering the old (channel) address after the client moved: an
// inbound channel packet after the bound is evidence even from a quiet client. Channel
// packets within the bound (in flight before the server saw the new path) are not.
TEST(ClassifierWatchdog, StalePathAnswersOnTheChannelFail) {
  Harness h;
  h.handshake(6300, 0ms, 20ms);
  EXPECT_EQ(h.out(6300, short_header(), 30ms).path, Path::native);
  (void)h.in(6300, short_header(), 45ms, Direction::inbound_channel);  // in flight
  EXPECT_EQ(h.c.find_flow(key4(6300))->state, FlowState::native_pending);
  h.c.on_expiry(at(230ms));  // quiet at the bound: one packet
  EXPECT_EQ(h.c.find_flow(key4(6300))->state, FlowState::native_pending);
  (void)h.in(6300, short_header(), 300ms, Direction::inbound_channel);  // stale path
  EXPECT_EQ(h.c.find_flow(key4(6300))->state, FlowState::failed);
  EXPECT_EQ(h.out(6300, short_header(), 310ms).reason, Reason::migration_failed);
  EXPECT_EQ(h.c.counters().failed_back, 1u);
  // With a busy client (ACKs of the data that comes on the channel), the count suffices.
  Harness g;
  g.handshake(6301, 0ms, 20ms);
  for (Duration t = 30ms; t < 200ms; t += 20ms) {
    (void)g.out(6301, short_header(), t);
    (void)g.in(6301, short_header(), t + 5ms, Direction::inbound_channel);
  }
  g.c.on_expiry(at(230ms));
  EXPECT_EQ(g.c.find_flow(key4(6301))->state, FlowState::failed);
}

// One misjudged flow blocks its destination briefly; repeats escalate to the TTL.
TEST(ClassifierWatchdog, PenaltyEscalates) {
  Policy p;
  p.watchdog.min_unanswered_packets = 1;
  p.destinations.first_penalty = 10min;
  Harness h(p);
  (void)h.out(1, short_header(), 0ms);
  h.c.on_expiry(at(1s));
  EXPECT_EQ(h.out(2, short_header(), 10min).reason, Reason::destination_non_migrating);
  EXPECT_EQ(h.out(3, short_header(), 10min + 1s).reason, Reason::quic_short_native);
  h.c.on_expiry(at(11min));  // port 3 fails too: 20 minutes now
  EXPECT_EQ(h.out(4, short_header(), 30min).reason, Reason::destination_non_migrating);
  EXPECT_EQ(h.out(5, short_header(), 31min + 1s).reason, Reason::quic_short_native);
}

// The native switch: a moved flow's first native packets wait until rtt_percent of the
// handshake RTT after the client's last long header (the Finished); packets sent after that
// do not wait. The watchdog's bound starts when the wait ends.
TEST(ClassifierNativeSwitch, WaitsHalfTheHandshakeRttAfterTheLastLongHeader) {
  Harness h;  // defaults: enabled, 50%, 1 ms .. 100 ms
  h.handshake(5000, 0ms, 40ms);
  EXPECT_EQ(h.out(5000, handshake_v1(), 50ms), (Decision{Path::channel, Reason::quic_long_header}));
  EXPECT_EQ(h.out(5000, short_header(), 51ms),
            (Decision{Path::native, Reason::quic_short_native, at(70ms)}));
  EXPECT_EQ(h.out(5000, short_header(), 60ms),
            (Decision{Path::native, Reason::quic_short_native, at(70ms)}));
  EXPECT_EQ(h.out(5000, short_header(), 75ms).not_before, at(70ms));  // past: no wait
  EXPECT_EQ(h.c.counters().switch_waits, 1u);
  EXPECT_EQ(h.c.counters().switch_wait_ns, std::uint64_t(19'000'000));
  // Bound: from the end of the wait, max(200 ms, 3 x 40 ms).
  EXPECT_EQ(h.c.next_expiry(), at(270ms));
  EXPECT_EQ(h.in(5000, short_header(), 80ms, Direction::inbound_native).reason,
            Reason::migration_confirmed);
  EXPECT_EQ(h.out(5000, short_header(), 81ms), (Decision{Path::native, Reason::quic_short_native}));
}

TEST(ClassifierNativeSwitch, ADownloadsFirstAckComesAfterTheWaitAndDoesNotWait) {
  Harness h;
  h.handshake(5000, 0ms, 40ms);
  EXPECT_EQ(h.out(5000, handshake_v1(), 50ms).path, Path::channel);  // Finished + request
  EXPECT_EQ(h.out(5000, short_header(), 90ms), (Decision{Path::native, Reason::quic_short_native}));
  EXPECT_EQ(h.c.counters().switch_waits, 0u);
  EXPECT_EQ(h.c.next_expiry(), at(290ms));
}

TEST(ClassifierNativeSwitch, BoundsAndUnknownRtt) {
  Policy p;
  p.native_switch.min_delay = 2ms;
  p.native_switch.max_delay = 30ms;
  p.native_switch.unknown_rtt_delay = 4ms;
  Harness h(p);
  h.handshake(5000, 0ms, 2ms);  // 50% of 2 ms = 1 ms: raised to 2 ms
  EXPECT_EQ(h.out(5000, handshake_v1(), 3ms).path, Path::channel);
  EXPECT_EQ(h.out(5000, short_header(), 3ms).not_before, at(5ms));
  h.handshake(5001, 10ms, 400ms);  // 200 ms: capped at 30 ms
  EXPECT_EQ(h.out(5001, handshake_v1(), 411ms).path, Path::channel);
  EXPECT_EQ(h.out(5001, short_header(), 412ms).not_before, at(441ms));
  // No handshake seen (a flow older than the daemon): unknown_rtt_delay after the move.
  EXPECT_EQ(h.out(5002, short_header(), 500ms).not_before, at(504ms));
  // A sample with no outbound long header seen is not used either.
  p.native_switch.unknown_rtt_delay = Duration::zero();
  ASSERT_TRUE(h.c.update_policy(p));
  EXPECT_EQ(h.out(5003, short_header(), 600ms).not_before, Timestamp{});
}

TEST(ClassifierNativeSwitch, OffOrWithoutTheWatchdogNothingWaits) {
  for (int variant = 0; variant < 2; ++variant) {
    Policy p;
    if (variant == 0) p.native_switch.enabled = false;
    if (variant == 1) p.watchdog.enabled = false;
    Harness h(p);
    h.handshake(5000, 0ms, 40ms);
    EXPECT_EQ(h.out(5000, short_header(), 41ms),
              (Decision{Path::native, Reason::quic_short_native}));
  }
}

TEST(ClassifierNativeSwitch, ALongHeaderNeverConfirmsAMigration) {
  Harness h;
  h.handshake(5000, 0ms, 40ms);
  EXPECT_EQ(h.out(5000, short_header(), 100ms).path, Path::native);
  // Tagged native (a re-created channel device, before the daemon knows its index).
  EXPECT_EQ(h.in(5000, handshake_v1(), 120ms, Direction::inbound_native).reason,
            Reason::inbound);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::native_pending);
  EXPECT_EQ(h.in(5000, short_header(), 130ms, Direction::inbound_native).reason,
            Reason::migration_confirmed);
}

TEST(ClassifierNativeSwitch, ALateLongHeaderOnTheChannelIsNoStalePathEvidence) {
  Harness h;
  h.handshake(5000, 0ms, 40ms);
  EXPECT_EQ(h.out(5000, short_header(), 100ms).path, Path::native);  // bound at 300 ms
  EXPECT_EQ(h.in(5000, handshake_v1(), 350ms, Direction::inbound_channel).reason, Reason::inbound);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::native_pending);
  EXPECT_EQ(h.in(5000, short_header(), 360ms, Direction::inbound_channel).reason, Reason::inbound);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::failed);
}

}  // namespace
}  // namespace quicstep::client::core

namespace quicstep::client::core {
namespace {

// The routed native path: the daemon sees one short header on the channel (the move), the
// rest leave natively unseen; the guard's counts come in through native_report().
TEST(ClassifierNativeReport, AnswerCountedInTheKernelConfirmsEvenWhenReadAfterTheBound) {
  Harness h;
  h.handshake(6200, 0ms, 10ms);
  EXPECT_EQ(h.out(6200, short_header(), 20ms).path, Path::native);
  const Timestamp deadline = h.c.next_expiry();
  EXPECT_EQ(deadline, at(220ms));
  h.c.native_report(key4(6200), 40, Timestamp{}, at(100ms));  // sent, not answered yet
  EXPECT_EQ(h.c.find_flow(key4(6200))->state, FlowState::native_pending);
  // Read at the deadline; the first answer came at 30 ms: in time, confirmed.
  h.c.native_report(key4(6200), 10, at(30ms), deadline);
  h.c.on_expiry(deadline);
  EXPECT_EQ(h.c.find_flow(key4(6200))->state, FlowState::native_confirmed);
  const auto ev = drain(h.c);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].kind, FlowEvent::Kind::confirmed);
  EXPECT_EQ(h.c.counters().confirmed, 1u);
}

TEST(ClassifierNativeReport, UnansweredPacketsFailAtTheBound) {
  Harness h;
  h.handshake(6201, 0ms, 10ms);
  EXPECT_EQ(h.out(6201, short_header(), 20ms).path, Path::native);
  h.c.native_report(key4(6201), 5, Timestamp{}, at(219ms));
  h.c.on_expiry(at(220ms));
  EXPECT_EQ(h.c.find_flow(key4(6201))->state, FlowState::failed);
  // A first answer past the bound, with the evidence in: too late.
  h.handshake(6202, 0ms, 10ms, "198.18.1.11");
  (void)h.out(6202, short_header(), 20ms, "198.18.1.11");
  h.c.native_report(key4(6202, "198.18.1.11"), 5, at(221ms), at(230ms));
  EXPECT_EQ(h.c.find_flow(key4(6202, "198.18.1.11"))->state, FlowState::failed);
  EXPECT_EQ(h.c.counters().failed_back, 2u);
}

TEST(ClassifierNativeReport, QuietAtTheBoundIsJudgedByLaterReports) {
  Harness h;
  h.handshake(6203, 0ms, 10ms);
  EXPECT_EQ(h.out(6203, short_header(), 20ms).path, Path::native);
  h.c.on_expiry(at(220ms));  // one packet: not judged
  EXPECT_EQ(h.c.find_flow(key4(6203))->state, FlowState::native_pending);
  EXPECT_EQ(h.c.counters().quiet_at_bound, 1u);
  h.c.native_report(key4(6203), 1, Timestamp{}, at(300ms));  // 2 of 3: still not
  EXPECT_EQ(h.c.find_flow(key4(6203))->state, FlowState::native_pending);
  h.c.native_report(key4(6203), 1, Timestamp{}, at(400ms));  // the evidence, unanswered
  EXPECT_EQ(h.c.find_flow(key4(6203))->state, FlowState::failed);
}

// The routed path's copies of channel packets (outbound_copy) are decided as outbound ones
// but took the channel: a moved flow's packets copied before its element took effect are no
// native evidence. Counted as native, two copies and one native ACK (which a server never
// answers) failed a quiet flow at the bound (a LAN host's short fetch through the proxy).
TEST(ClassifierNativeReport, CopiesFromTheChannelAreNoNativeEvidence) {
  Harness h;
  h.handshake(6205, 0ms, 10ms);
  const auto copy = [&](Duration t) {
    return h.c.classify(out4(6205, short_header()), Direction::outbound_copy, at(t));
  };
  EXPECT_EQ(copy(20ms).path, Path::native);  // the move
  EXPECT_EQ(copy(21ms).path, Path::native);  // before the element: still on the channel
  h.c.native_report(key4(6205), 1, Timestamp{}, at(200ms));  // one native packet, quiet
  h.c.on_expiry(at(220ms));
  EXPECT_EQ(h.c.find_flow(key4(6205))->state, FlowState::native_pending);
  EXPECT_EQ(h.c.find_flow(key4(6205))->native_packets, 1u);
  EXPECT_EQ(h.c.find_flow(key4(6205))->channel_packets, 3u);  // the Initial and two copies
  EXPECT_EQ(h.c.counters().failed_back, 0u);
  EXPECT_EQ(h.c.counters().quiet_at_bound, 1u);
}

TEST(ClassifierNativeReport, ReportsKeepAFlowAliveAndIgnoreUnknownFlows) {
  Policy p;
  p.flows.idle_timeout = 1s;
  Harness h(p);
  h.handshake(6204, 0ms, 10ms);
  EXPECT_EQ(h.out(6204, short_header(), 20ms).path, Path::native);
  h.c.native_report(key4(6204), 0, at(25ms), at(900ms));  // confirmed, and touched
  h.c.on_expiry(at(1500ms));
  ASSERT_NE(h.c.find_flow(key4(6204)), nullptr);
  EXPECT_EQ(h.c.find_flow(key4(6204))->state, FlowState::native_confirmed);
  h.c.native_report(key4(7000), 5, at(1ms), at(1600ms));  // unknown: nothing happens
  EXPECT_EQ(h.c.find_flow(key4(7000)), nullptr);
  h.c.on_expiry(at(3s));
  EXPECT_EQ(h.c.find_flow(key4(6204)), nullptr);  // no report since: forgotten
}

TEST(ClassifierForget, AClosedSocketsFlowStartsAfreshOnItsPorts) {
  Harness h;
  h.handshake(6205, 0ms, 10ms);
  EXPECT_EQ(h.out(6205, short_header(), 20ms).path, Path::native);
  h.c.native_report(key4(6205), 0, at(25ms), at(30ms));
  EXPECT_EQ(h.c.find_flow(key4(6205))->state, FlowState::native_confirmed);
  (void)drain(h.c);
  EXPECT_TRUE(h.c.forget(key4(6205), at(40ms)));
  EXPECT_EQ(h.c.find_flow(key4(6205)), nullptr);
  const auto ev = drain(h.c);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, FlowEvent::Kind::forgotten);
  EXPECT_EQ(h.c.counters().flows_closed, 1u);
  EXPECT_FALSE(h.c.forget(key4(6205), at(41ms)));  // unknown: nothing
  EXPECT_EQ(h.c.counters().flows_closed, 1u);
  // A new connection on the same ports: a handshake again, then the native switch's wait
  // (a flow that stayed native_confirmed would have sent its first short header at once).
  h.handshake(6205, 100ms, 10ms);
  EXPECT_EQ(h.out(6205, handshake_v1(), 115ms).path, Path::channel);
  const Decision d = h.out(6205, short_header(), 116ms);
  EXPECT_EQ(d.path, Path::native);
  EXPECT_EQ(d.not_before, at(120ms));
  EXPECT_EQ(h.c.find_flow(key4(6205))->state, FlowState::native_pending);
}

// A server that offers a preferred address (RFC 9000 §9.6): its client leaves the handshake's
// flow for the new address from the same socket. The old flow is pinned to the channel (a
// late packet there must not move it now); later connections to that server stay on the
// channel until their client moves, or, for a client that does not, for at least 500 ms.
TEST(ClassifierPreferredAddress, TheClientsMoveIsLearntAndLaterConnectionsWaitForIt) {
  const char* preferred = "198.18.1.11";
  Harness h;
  h.handshake(5000, 0ms, 10ms);
  EXPECT_EQ(h.out(5000, handshake_v1(), 15ms).path, Path::channel);  // Finished + request
  // The client moves once the handshake is confirmed: short headers to the other address.
  EXPECT_EQ(h.out(5000, short_header(), 30ms, preferred).path, Path::native);
  EXPECT_EQ(h.c.counters().preferred_address_moves, 1u);
  EXPECT_EQ(h.c.counters().preferred_address_after_move, 0u);
  EXPECT_EQ(h.c.preferred_addresses().destinations(), 1u);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::pinned_channel);
  EXPECT_EQ(h.out(5000, short_header(), 31ms).path, Path::channel);  // a late one, old path
  EXPECT_EQ(h.out(5000, short_header(), 32ms, preferred).path, Path::native);

  // The next connection to the server: held on the channel until its client moves.
  h.handshake(5001, 1s, 10ms);
  EXPECT_EQ(h.out(5001, handshake_v1(), 1015ms).path, Path::channel);
  EXPECT_EQ(h.out(5001, short_header(), 1020ms), (Decision{Path::channel, Reason::hold}));
  EXPECT_EQ(h.c.find_flow(key4(5001))->state, FlowState::held);
  EXPECT_EQ(h.out(5001, short_header(), 1040ms, preferred).path, Path::native);
  EXPECT_EQ(h.c.find_flow(key4(5001))->state, FlowState::pinned_channel);
  EXPECT_EQ(h.out(5001, short_header(), 3s).path, Path::channel);

  // A client that does not take the address: on the channel until max(4 x RTT, 500 ms)
  // after its last long header, then moved as any flow.
  h.handshake(5002, 5s, 10ms);
  EXPECT_EQ(h.out(5002, handshake_v1(), 5015ms).path, Path::channel);
  EXPECT_EQ(h.out(5002, short_header(), 5514ms).path, Path::channel);
  EXPECT_EQ(h.out(5002, short_header(), 5515ms).path, Path::native);
  EXPECT_EQ(h.c.counters().held_for_preferred_address, 2u);
  EXPECT_EQ(h.c.counters().preferred_address_moves, 2u);
  // Another server and another port of this one are not held.
  h.handshake(5003, 6s, 10ms, "198.18.1.12");
  EXPECT_EQ(h.out(5003, short_header(), 6020ms, "198.18.1.12").path, Path::native);
}

TEST(ClassifierPreferredAddress, AMoveAfterTheFlowWentNativeIsCountedAndLeftAlone) {
  Harness h;
  h.handshake(5000, 0ms, 10ms);
  EXPECT_EQ(h.out(5000, short_header(), 20ms).path, Path::native);
  EXPECT_EQ(h.out(5000, short_header(), 40ms, "198.18.1.11").path, Path::native);
  EXPECT_EQ(h.c.counters().preferred_address_moves, 1u);
  EXPECT_EQ(h.c.counters().preferred_address_after_move, 1u);
  EXPECT_EQ(h.c.find_flow(key4(5000))->state, FlowState::native_pending);
}

// What is not a move to a preferred address: a short-header-first flow from another port,
// to the handshake's own address (a flow the daemon forgot), to another server port, from
// a socket whose handshake is older than the window, or a flow that began with a handshake.
TEST(ClassifierPreferredAddress, OnlyAShortHeaderFirstFlowFromTheHandshakesSocketCounts) {
  Policy policy;
  policy.quic_ports = {443, 8443};
  Harness h(policy);
  h.handshake(5000, 0ms, 10ms);
  EXPECT_EQ(h.out(5001, short_header(), 20ms, "198.18.1.11").path, Path::native);
  EXPECT_TRUE(h.c.forget(key4(5000), at(21ms)));
  EXPECT_EQ(h.out(5000, short_header(), 22ms).path, Path::native);
  EXPECT_EQ(h.c.classify(out4(5000, short_header(), "198.18.1.11", 8443), Direction::outbound,
                         at(23ms)).path,
            Path::native);
  h.handshake(6000, 1s, 10ms);
  EXPECT_EQ(h.out(6000, short_header(), 12s, "198.18.1.11").path, Path::native);
  h.handshake(7000, 20s, 10ms);
  h.handshake(7000, 20s, 10ms, "198.18.1.12");
  EXPECT_EQ(h.out(7000, short_header(), 20020ms, "198.18.1.12").path, Path::native);
  EXPECT_EQ(h.c.counters().preferred_address_moves, 0u);
  EXPECT_EQ(h.c.preferred_addresses().destinations(), 0u);
}

}  // namespace
}  // namespace quicstep::client::core
