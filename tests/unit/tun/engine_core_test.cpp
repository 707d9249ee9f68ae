// The TUN engine's decisions, in simulated time against a recording EngineIo: what goes to
// the channel, what leaves on a relay and when, what comes back into the TUN, and that
// nothing leaves natively that the classifier did not send there.
#include "client/tun/engine_core.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/ip_packet.hpp"
#include "unit/client/client_packets.hpp"

namespace quicstep::client::tun {
namespace {

using namespace core::testing;  // NOLINT: the test packets
using namespace std::chrono_literals;
using core::Reason;

Timestamp at(Duration d) { return Timestamp{0} + d; }
FlowKey flow4(std::uint16_t cport) {
  return FlowKey::from_client(*common::parse_ip_packet(out4(cport, short_header())));
}

struct Call {
  std::string what;  // open, close, native, channel, tun
  RelayId relay = kNoRelay;
  std::vector<std::uint8_t> bytes;
  FlowKey flow{};
  friend bool operator==(const Call&, const Call&) = default;
};

class RecordingIo : public EngineIo {
 public:
  std::vector<Call> calls;
  bool refuse_open = false;
  std::vector<RelayId> open;

  bool open_relay(RelayId id, const FlowKey& flow) override {
    calls.push_back({"open", id, {}, flow});
    if (refuse_open) return false;
    open.push_back(id);
    return true;
  }
  void close_relay(RelayId id) override {
    calls.push_back({"close", id, {}, {}});
    std::erase(open, id);
  }
  void send_native(RelayId id, common::Bytes p) override {
    calls.push_back({"native", id, {p.begin(), p.end()}, {}});
  }
  void send_channel(common::Bytes p) override {
    calls.push_back({"channel", kNoRelay, {p.begin(), p.end()}, {}});
  }
  void write_tun(common::Bytes p) override {
    calls.push_back({"tun", kNoRelay, {p.begin(), p.end()}, {}});
  }
  std::vector<Call> take() { return std::exchange(calls, {}); }
};

Call channel(const ByteVec& p) { return {"channel", kNoRelay, p, {}}; }
Call tun(const ByteVec& p) { return {"tun", kNoRelay, p, {}}; }
Call native(RelayId id, const ByteVec& payload) { return {"native", id, payload, {}}; }

struct Engine {
  RecordingIo io;
  EngineCore e;
  explicit Engine(EngineConfig c = {}) : e(c, io) {}
  // Initial out at t0 and the server's Initial back through the channel at t0 + rtt, then
  // the client's Handshake (Finished) at t0 + rtt + 1 ms: the flow may move 50% of the
  // RTT after that.
  void handshake(std::uint16_t cport, Duration t0, Duration rtt) {
    e.from_tun(out4(cport, initial_v1()), at(t0));
    e.from_channel(in4(cport, initial_v1()), at(t0 + rtt));
    e.from_tun(out4(cport, handshake_v1()), at(t0 + rtt + 1ms));
  }
};

TEST(EngineCore, HandshakesDnsAndTcpGoThroughTheChannelUnchanged) {
  Engine t;
  const ByteVec dns = udp4(5353, 53, ByteVec(30, 1));
  const ByteVec tcp = PacketBuilder().ipv4(kClient4, kServer4).tcp(40000, 443).payload("hello").build();
  for (const ByteVec& p : {dns, tcp, out4(1, initial_v1()), out6(2, initial_v2()),
                           out4(3, version_negotiation()), out4(4, greased_long())}) {
    t.e.from_tun(p, at(0s));
    EXPECT_EQ(t.io.take(), (std::vector<Call>{channel(p)}));
  }
  EXPECT_EQ(t.e.counters().to_channel.packets, 6u);
  EXPECT_EQ(t.e.counters().to_native.packets, 0u);
}

TEST(EngineCore, DnsIntoTheChannelGoesToTheChannelsResolverAndComesBackFromTheOneAsked) {
  EngineConfig c;
  c.channel_dns_v4 = common::parse_ip_packet(udp4(1, 2, {}, "10.64.0.1", kClient4))->src;
  Engine t(c);
  t.e.from_tun(udp4(5353, 53, ByteVec(30, 1), kClient4, "192.168.1.1"), at(0s));
  EXPECT_EQ(t.io.take(),
            (std::vector<Call>{channel(udp4(5353, 53, ByteVec(30, 1), kClient4, "10.64.0.1"))}));
  t.e.from_channel(udp4(53, 5353, ByteVec(60, 2), "10.64.0.1", kClient4), at(10ms));
  EXPECT_EQ(t.io.take(),
            (std::vector<Call>{tun(udp4(53, 5353, ByteVec(60, 2), "192.168.1.1", kClient4))}));
  EXPECT_EQ(t.e.channel_dns().redirected(), 1u);
  EXPECT_EQ(t.e.channel_dns().answered(), 1u);
  // IPv6 has no resolver here: its queries keep theirs.
  const ByteVec q6 = udp6(5353, 53, ByteVec(30, 1));
  t.e.from_tun(q6, at(20ms));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{channel(q6)}));
}

TEST(EngineCore, MalformedPacketsAreCountedAndGoToTheChannel) {
  Engine t;
  const ByteVec junk{0x45, 0, 0, 3};
  t.e.from_tun(junk, at(0s));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{channel(junk)}));
  EXPECT_EQ(t.e.counters().malformed, 1u);
  t.e.from_tun({}, at(0s));  // an empty read: nothing to send, no empty message to the helper
  EXPECT_TRUE(t.io.take().empty());
}

TEST(EngineCore, ShortHeadersLeaveOnTheFlowsRelayAfterTheNativeSwitch) {
  Engine t;
  t.handshake(5000, 0ms, 40ms);
  t.io.take();
  // The first short header at 42 ms: the switch ends 20 ms after the Finished (41 ms).
  const ByteVec q1 = short_header(100, 0x41), q2 = short_header(90, 0x42);
  t.e.from_tun(out4(5000, q1), at(42ms));
  auto calls = t.io.take();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].what, "open");
  EXPECT_EQ(calls[0].flow, flow4(5000));
  const RelayId id = calls[0].relay;
  EXPECT_EQ(t.e.counters().held, 1u);
  EXPECT_EQ(t.e.next_expiry(), at(61ms));
  t.e.from_tun(out4(5000, q2), at(50ms));  // waits behind the first
  EXPECT_TRUE(t.io.take().empty());
  t.e.on_expiry(at(61ms));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{native(id, q1), native(id, q2)}));
  // Later packets go at once.
  const ByteVec q3 = short_header(80, 0x43);
  t.e.from_tun(out4(5000, q3), at(70ms));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{native(id, q3)}));
  EXPECT_EQ(t.e.counters().to_native.packets, 3u);
  EXPECT_EQ(t.e.counters().to_native.bytes, 100u + 90 + 80 + 3 * kIpv4UdpHeaders);
}

TEST(EngineCore, HeldPacketsLeaveBeforeALaterPacketOfTheirFlow) {
  Engine t;
  t.handshake(5001, 0ms, 40ms);
  t.io.take();
  const ByteVec q1 = short_header(100, 0x41), q2 = short_header(90, 0x42);
  t.e.from_tun(out4(5001, q1), at(42ms));
  const RelayId id = t.io.take().at(0).relay;
  // No timer ran: the next packet, after the switch's end, releases the held one first.
  t.e.from_tun(out4(5001, q2), at(80ms));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{native(id, q1), native(id, q2)}));
}

TEST(EngineCore, ServerAnswersComeBackIntoTheTunAndConfirmTheMigration) {
  Engine t;
  t.handshake(5002, 0ms, 40ms);
  t.e.from_tun(out4(5002, short_header()), at(70ms));
  auto calls = t.io.take();
  const RelayId id = calls.at(calls.size() - 2).relay;
  ASSERT_EQ(calls.back().what, "native");
  const ByteVec answer = short_header(300, 0x45);
  t.e.from_relay(id, answer, at(90ms));
  // What the application's socket gets: from the server to its own address and port.
  const ByteVec expected =
      PacketBuilder().ipv4(kServer4, kClient4).dont_fragment().udp(443, 5002).payload(answer).build();
  EXPECT_EQ(t.io.take(), (std::vector<Call>{tun(expected)}));
  EXPECT_EQ(t.e.classifier().counters().confirmed, 1u);
  EXPECT_EQ(t.e.counters().from_native.packets, 1u);
  EXPECT_EQ(t.e.relays().relay(id).counters.rx_bytes, 300u);
}

TEST(EngineCore, ChannelPacketsAreWrittenIntoTheTunAsTheyCame) {
  Engine t;
  const ByteVec p = in6(443, handshake_v1());
  t.e.from_channel(p, at(0s));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{tun(p)}));
}

TEST(EngineCore, ARelayThatCannotOpenSendsThroughTheChannel) {
  Engine t;
  t.io.refuse_open = true;
  t.handshake(5003, 0ms, 40ms);
  t.io.take();
  const ByteVec p = out4(5003, short_header());
  t.e.from_tun(p, at(70ms));
  auto calls = t.io.take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].what, "open");
  EXPECT_EQ(calls[1], channel(p));
  EXPECT_EQ(t.e.counters().relay_open_failed, 1u);
  // The next packet tries again.
  t.io.refuse_open = false;
  t.e.from_tun(p, at(80ms));
  calls = t.io.take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].what, "open");
  EXPECT_EQ(calls[1].what, "native");
}

TEST(EngineCore, AFullHoldSendsThroughTheChannel) {
  EngineConfig c;
  c.held_capacity = 1;
  Engine t(c);
  t.handshake(5004, 0ms, 40ms);
  t.io.take();
  t.e.from_tun(out4(5004, short_header(60, 0x41)), at(42ms));
  t.io.take();
  const ByteVec p = out4(5004, short_header(60, 0x42));
  t.e.from_tun(p, at(43ms));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{channel(p)}));
  EXPECT_EQ(t.e.counters().hold_refused, 1u);
}

TEST(EngineCore, AFailedMigrationGoesBackToTheChannel) {
  Engine t;
  t.handshake(5005, 0ms, 40ms);
  for (int i = 0; i < 3; ++i) t.e.from_tun(out4(5005, short_header()), at(70ms + i * 1ms));
  t.io.take();
  // No answer on the relay: past the bound (200 ms after the switch), the flow fails back.
  t.e.on_expiry(at(400ms));
  const ByteVec p = out4(5005, short_header());
  t.e.from_tun(p, at(410ms));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{channel(p)}));
  EXPECT_EQ(t.e.classifier().counters().failed_back, 1u);
  // A late answer on the relay still reaches the application.
  const RelayId id = t.e.relays().find(flow4(5005));
  ASSERT_NE(id, kNoRelay);
  t.e.from_relay(id, short_header(), at(420ms));
  EXPECT_EQ(t.io.take().size(), 1u);
}

TEST(EngineCore, IdleRelaysAndForgottenFlowsAreClosed) {
  EngineConfig c;
  c.relay_idle = 5s;
  Engine t(c);
  t.handshake(5006, 0ms, 40ms);
  t.e.from_tun(out4(5006, short_header()), at(70ms));
  t.e.from_relay(t.e.relays().find(flow4(5006)), short_header(), at(80ms));
  t.io.take();
  EXPECT_EQ(t.e.next_expiry(), at(80ms + 5s));
  t.e.on_expiry(at(80ms + 5s));
  auto calls = t.io.take();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].what, "close");
  EXPECT_TRUE(t.io.open.empty());
  // A datagram read just before the close reaches no one.
  t.e.from_relay(calls[0].relay, short_header(), at(6s));
  EXPECT_EQ(t.e.counters().relay_unknown, 1u);
  EXPECT_TRUE(t.io.take().empty());

  // The classifier forgetting a flow (idle) closes its relay too.
  EngineConfig c2;
  c2.policy.flows.idle_timeout = 2s;
  Engine u(c2);
  u.handshake(5007, 0ms, 40ms);
  u.e.from_tun(out4(5007, short_header()), at(70ms));
  u.e.from_relay(u.e.relays().find(flow4(5007)), short_header(), at(80ms));
  u.io.take();
  u.e.on_expiry(at(3s));
  calls = u.io.take();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].what, "close");
  EXPECT_EQ(u.e.relays().size(), 0u);
}

TEST(EngineCore, RelaysAreBounded) {
  EngineConfig c;
  c.relay_capacity = 2;
  Engine t(c);
  for (std::uint16_t port = 6000; port < 6003; ++port) {
    t.handshake(port, 0ms, 40ms);
    t.e.from_tun(out4(port, short_header()), at(100ms));
  }
  EXPECT_EQ(t.e.relays().size(), 2u);
  EXPECT_EQ(t.e.counters().relays_evicted, 1u);
  EXPECT_EQ(t.io.open.size(), 2u);
  EXPECT_EQ(t.e.relays().find(flow4(6000)), kNoRelay);
}

TEST(EngineCore, ANetworkChangeReopensEveryRelay) {
  Engine t;
  t.handshake(5008, 0ms, 40ms);
  t.e.from_tun(out4(5008, short_header()), at(70ms));
  const RelayId id = t.e.relays().find(flow4(5008));
  t.io.take();
  t.e.network_changed(at(1s));
  auto calls = t.io.take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], (Call{"close", id, {}, {}}));
  EXPECT_EQ(calls[1], (Call{"open", id, {}, flow4(5008)}));
  // A relay that cannot open on the new network is closed; the flow's next packet tries anew.
  t.io.refuse_open = true;
  t.e.network_changed(at(2s));
  EXPECT_EQ(t.e.relays().size(), 0u);
  EXPECT_EQ(t.e.counters().network_changes, 2u);
}

// A new uplink announces its IPv4 source a moment before its IPv6 one. The IPv6 change
// must not re-bind the IPv4 relay again: its new port would refuse the server's packets
// already on their way to the one the server just migrated to (seen in the TUN lab: the
// transfer stalled after a network switch).
TEST(EngineCore, ANetworkChangeReopensOnlyTheChangedFamilysRelays) {
  Engine t;
  t.handshake(5010, 0ms, 40ms);
  t.e.from_tun(out4(5010, short_header()), at(70ms));
  t.e.from_tun(out6(5011, initial_v1()), at(0ms));
  t.e.from_channel(in6(5011, initial_v1()), at(40ms));
  t.e.from_tun(out6(5011, handshake_v1()), at(41ms));
  t.e.from_tun(out6(5011, short_header()), at(70ms));
  const RelayId v4 = t.e.relays().find(flow4(5010));
  const RelayId v6 = t.e.relays().find(
      FlowKey::from_client(*common::parse_ip_packet(out6(5011, short_header()))));
  ASSERT_NE(v4, kNoRelay);
  ASSERT_NE(v6, kNoRelay);
  t.io.take();
  t.e.network_changed(at(1s), {.v4 = false, .v6 = true});
  EXPECT_EQ(t.io.take(), (std::vector<Call>{{"close", v6, {}, {}},
                                            {"open", v6, {}, t.e.relays().flow(v6)}}));
  t.e.network_changed(at(2s), {.v4 = true, .v6 = false});
  EXPECT_EQ(t.io.take(), (std::vector<Call>{{"close", v4, {}, {}},
                                            {"open", v4, {}, flow4(5010)}}));
  t.e.network_changed(at(3s));  // the control socket's request: both
  EXPECT_EQ(t.io.take().size(), 4u);
}

TEST(EngineCore, OtherUdpIsRelayedAndOtherProtocolsGoThroughTheChannel) {
  Engine t;  // the default policy: other UDP and other protocols native
  const ByteVec game = udp4(7000, 9999, ByteVec(40, 7));
  t.e.from_tun(game, at(0s));
  auto calls = t.io.take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].what, "open");
  EXPECT_EQ(calls[1], native(calls[0].relay, ByteVec(40, 7)));
  const ByteVec icmp = PacketBuilder().ipv4(kClient4, kServer4).protocol(1).payload("ping").build();
  t.e.from_tun(icmp, at(0s));
  EXPECT_EQ(t.io.take(), (std::vector<Call>{channel(icmp)}));
  EXPECT_EQ(t.e.counters().native_not_udp, 1u);
}

// Invariant 1 as a property: over every shape of packet, in any order, a packet leaves on
// a relay only if it is a QUIC short header on a QUIC port (other UDP set to the channel).
TEST(EngineCore, NothingButShortHeadersLeavesNatively) {
  EngineConfig c;
  c.policy.other_udp = core::Route::channel;
  c.policy.other_protocols = core::Route::channel;
  Engine t(c);
  const std::vector<ByteVec> quic = {initial_v1(), zero_rtt_v1(), handshake_v1(), retry_v1(),
                                     initial_v2(), version_negotiation(), greased_long(),
                                     unknown_version_long(), short_header(), ByteVec{}};
  Duration now = 0ms;
  for (int round = 0; round < 3; ++round) {
    for (std::uint16_t port = 100; port < 104; ++port) {
      for (const ByteVec& q : quic) {
        now += 7ms;
        t.e.from_tun(out4(port, q), at(now));
        t.e.from_channel(in4(port, q), at(now + 1ms));
        t.e.from_tun(out6(port, q), at(now + 2ms));
        t.e.on_expiry(at(now + 3ms));
      }
    }
  }
  std::size_t natives = 0;
  for (const Call& call : t.io.calls) {
    if (call.what != "native") continue;
    ++natives;
    ASSERT_FALSE(call.bytes.empty());
    EXPECT_EQ(call.bytes[0] & 0x80, 0) << "a long header left natively";
  }
  EXPECT_GT(natives, 0u);  // the property is not vacuous
}

}  // namespace
}  // namespace quicstep::client::tun
