// What a censor pays per connection: HandshakeObserver on the real Chromium capture's first
// client Initials (key derivation, header-protection removal, two AES-GCM decryptions,
// CRYPTO reassembly, ClientHello parse), against a flow's later short-header packets.
#include <benchmark/benchmark.h>

#include <pcap/pcap.h>

#include <string>
#include <vector>

#include "common/handshake_observer.hpp"
#include "common/link_layer.hpp"

namespace {

using namespace quicstep::common;

std::vector<std::vector<std::uint8_t>> capture(const std::string& name) {
  const std::string path = std::string(QS_TEST_DATA_DIR) + "/" + name;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  std::vector<std::vector<std::uint8_t>> out;
  pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
  if (p == nullptr) return out;
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  while (pcap_next_ex(p, &h, &data) == 1) {
    auto ip = ip_datagram_of_frame(LinkType::ethernet, Bytes(data, h->caplen));
    if (ip) out.emplace_back(ip->begin(), ip->end());
  }
  pcap_close(p);
  return out;
}

// Client datagrams up to and including the one that completes the ClientHello: the time
// per iteration is the time per ClientHello.
void BM_ObserveChromiumClientHello(benchmark::State& state) {
  auto packets = capture("chromium_quic_blocked.pcap");
  std::vector<std::vector<std::uint8_t>> hello_packets;
  {
    HandshakeObserver probe;
    for (auto& p : packets) {
      auto seen = probe.observe(p, Timestamp{});
      if (seen.from_client) hello_packets.push_back(p);
      if (seen.client_hello) break;
    }
  }
  std::size_t hellos = 0;
  for (auto _ : state) {
    HandshakeObserver observer;
    for (auto& p : hello_packets) hellos += observer.observe(p, Timestamp{}).client_hello.has_value();
  }
  if (hellos != static_cast<std::size_t>(state.iterations())) state.SkipWithError("ClientHello not found in every iteration");
}
BENCHMARK(BM_ObserveChromiumClientHello);

// A whole capture through one observer: mostly 1-RTT packets after the handshake.
void BM_ObserveWholeCapture(benchmark::State& state) {
  auto packets = capture("chromium_quic_blocked.pcap");
  for (auto _ : state) {
    HandshakeObserver observer;
    for (auto& p : packets) benchmark::DoNotOptimize(observer.observe(p, Timestamp{}));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(packets.size()));
}
BENCHMARK(BM_ObserveWholeCapture);

}  // namespace
