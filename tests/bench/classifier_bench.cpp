// The sans-IO classifier's decisions per second on one core (issue 4 target: >= 20 million).
// The mix: outbound short headers of 10,000 established (confirmed) QUIC flows, IPv4 and
// IPv6, plus QUIC long headers and DNS queries, in a shuffled order so that neither the
// branch predictor nor the caches can learn one flow. The packets are small (the classifier
// reads only the headers and the first QUIC byte), and their 16,384-packet ring fits in the
// caches, as a frontend's just-received packet does. Report ratios from one run: this
// machine is noisy.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <unordered_map>
#include <vector>

#include "client/core/classifier.hpp"
#include "support/packet_builder.hpp"

namespace {

using namespace quicstep::client::core;
using quicstep::common::Timestamp;
using quicstep::test::ByteVec;
using quicstep::test::PacketBuilder;

constexpr int kFlows = 10'000;
constexpr std::size_t kRing = 16'384;

ByteVec quic(std::uint8_t first, std::size_t size) {
  ByteVec p(size, 0x5c);
  p[0] = first;
  return p;
}

// Flow i: client port 20000 + i % 40000 to one of 256 servers, IPv6 for every fourth flow.
ByteVec flow_packet(int i, const ByteVec& payload, bool inbound) {
  const auto cport = static_cast<std::uint16_t>(20000 + i % 40000);
  const int server = i % 256;
  PacketBuilder b;
  if (i % 4 == 3) {
    std::array<std::uint8_t, 16> c = quicstep::test::ipv6_addr("2001:db8::2");
    std::array<std::uint8_t, 16> s = quicstep::test::ipv6_addr("2001:db8:1::");
    s[15] = static_cast<std::uint8_t>(server);
    inbound ? b.ipv6(s, c) : b.ipv6(c, s);
  } else {
    const std::array<std::uint8_t, 4> c{198, 18, 0, 2};
    const std::array<std::uint8_t, 4> s{198, 19, 1, static_cast<std::uint8_t>(server)};
    inbound ? b.ipv4(s, c) : b.ipv4(c, s);
  }
  inbound ? b.udp(443, cport) : b.udp(cport, 443);
  return b.payload(payload).build();
}

struct Mix {
  std::vector<ByteVec> packets;  // the ring, shuffled
  Classifier classifier{Policy{}};
};

// short_pct % short headers of established flows; the rest split between long headers (of
// new flows) and DNS queries.
Mix make_mix(int short_pct) {
  Mix m;
  std::int64_t t = 0;
  // Establish the flows: Initial, server Initial, short header, native answer.
  for (int i = 0; i < kFlows; ++i) {
    (void)m.classifier.classify(flow_packet(i, quic(0xc1, 64), false), Direction::outbound,
                                Timestamp{t += 1000});
    (void)m.classifier.classify(flow_packet(i, quic(0xc1, 64), true),
                                Direction::inbound_channel, Timestamp{t += 1000});
    (void)m.classifier.classify(flow_packet(i, quic(0x41, 64), false), Direction::outbound,
                                Timestamp{t += 1000});
    (void)m.classifier.classify(flow_packet(i, quic(0x41, 64), true), Direction::inbound_native,
                                Timestamp{t += 1000});
  }
  std::mt19937 rng(1);
  const auto dns = PacketBuilder().ipv4("198.18.0.2", "198.18.0.53").udp(40000, 53)
                       .payload(ByteVec(40, 0x11)).build();
  for (std::size_t k = 0; k < kRing; ++k) {
    const int roll = static_cast<int>(rng() % 100);
    if (roll < short_pct) {
      m.packets.push_back(flow_packet(static_cast<int>(rng() % kFlows), quic(0x41, 64), false));
    } else if (roll % 2 == 0) {
      m.packets.push_back(flow_packet(kFlows + static_cast<int>(rng() % 1000), quic(0xc1, 64),
                                      false));
    } else {
      m.packets.push_back(dns);
    }
  }
  return m;
}

void run(benchmark::State& state, Mix& m) {
  std::int64_t t = 1'000'000'000;
  std::size_t i = 0;
  std::uint64_t native = 0;
  for (auto _ : state) {
    const auto& p = m.packets[i++ & (kRing - 1)];
    const Decision d = m.classifier.classify(p, Direction::outbound, Timestamp{t += 50});
    native += d.path == Path::native;
  }
  benchmark::DoNotOptimize(native);
  state.SetItemsProcessed(state.iterations());
  state.counters["flows"] = static_cast<double>(m.classifier.flow_count());
  const auto n = static_cast<double>(std::max<std::int64_t>(1, state.iterations()));
  state.counters["native_share"] = static_cast<double>(native) / n;
}

// Arg: percentage of short headers in the mix (100: short headers only).
void BM_ClassifierMix(benchmark::State& state) {
  Mix m = make_mix(static_cast<int>(state.range(0)));
  run(state, m);
}
BENCHMARK(BM_ClassifierMix)->Arg(90)->Arg(100)->Arg(0)->ArgName("short_pct");

// The IP/UDP parse alone over the same ring: the floor under the classifier.
void BM_ClassifierParseOnly(benchmark::State& state) {
  Mix m = make_mix(90);
  std::size_t i = 0;
  for (auto _ : state) {
    auto p = quicstep::common::parse_ip_packet(m.packets[i++ & (kRing - 1)]);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClassifierParseOnly);

// The flow table's choice, measured: lookups of 10,000 live flows in the open-addressing
// LRU table (capacity 65,536, as the default policy) against std::unordered_map with
// reserve() and the common FNV-1a FlowKeyHash.
std::vector<quicstep::common::FlowKey> lookup_keys() {
  std::vector<quicstep::common::FlowKey> keys;
  for (int i = 0; i < kFlows; ++i) {
    auto p = quicstep::common::parse_ip_packet(flow_packet(i, quic(0x41, 64), false));
    keys.push_back(quicstep::common::FlowKey::from_client(*p));
  }
  std::vector<quicstep::common::FlowKey> order;
  std::mt19937 rng(2);
  for (std::size_t k = 0; k < kRing; ++k) order.push_back(keys[rng() % keys.size()]);
  return order;
}

void BM_FlowLookupLruTable(benchmark::State& state) {
  const auto keys = lookup_keys();
  FlowTable table(65536, std::chrono::seconds(120), 1);
  for (const auto& k : keys) {
    if (table.find(k) == FlowTable::npos) (void)table.insert(k, Timestamp{0});
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const auto h = table.find(keys[i++ & (kRing - 1)]);
    benchmark::DoNotOptimize(table.entry(h).state);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FlowLookupLruTable);

void BM_FlowLookupUnorderedMap(benchmark::State& state) {
  const auto keys = lookup_keys();
  std::unordered_map<quicstep::common::FlowKey, FlowEntry, quicstep::common::FlowKeyHash> map;
  map.reserve(65536);
  for (const auto& k : keys) map[k];
  std::size_t i = 0;
  for (auto _ : state) {
    const auto it = map.find(keys[i++ & (kRing - 1)]);
    benchmark::DoNotOptimize(it->second.state);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FlowLookupUnorderedMap);

}  // namespace
