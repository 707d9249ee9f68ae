// Hot paths of QUIC handling: the classifier's per-packet header look (first byte, full
// header parse, coalesced walk) and the inspector's per-connection Initial work (key
// derivation + header-protection removal + AES-GCM decryption of the RFC 9001 client
// Initial). Report ratios from one run: this machine is noisy.
#include <benchmark/benchmark.h>

#include <array>
#include <vector>

#include "common/initial_protection.hpp"
#include "common/quic_header.hpp"
#include "unit/common/quic_test_vectors.hpp"

namespace {

using namespace quicstep::common;
using quicstep::testing::from_hex;

// 256 datagrams, so the branch predictor cannot learn one packet: short headers with
// varying first bytes, or long headers of both versions.
std::vector<std::vector<std::uint8_t>> make_datagrams(bool long_headers) {
  std::vector<std::vector<std::uint8_t>> out;
  const auto v1 = from_hex(quicstep::testing::kV1ClientInitial);
  const auto v2 = from_hex(quicstep::testing::kV2ClientInitial);
  for (int i = 0; i < 256; ++i) {
    if (long_headers) {
      out.push_back(i % 2 ? v1 : v2);
    } else {
      std::vector<std::uint8_t> s(1200, static_cast<std::uint8_t>(i));
      s[0] = static_cast<std::uint8_t>(0x40 | (i & 0x3f));
      out.push_back(std::move(s));
    }
  }
  return out;
}

void BM_QuicClassifyFirstByte(benchmark::State& state) {
  const auto datagrams = make_datagrams(state.range(0) != 0);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto c = classify_first_byte(datagrams[i++ & 255]);
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_QuicClassifyFirstByte)->Arg(0)->Arg(1)->ArgName("long");

void BM_QuicParseHeader(benchmark::State& state) {
  const auto datagrams = make_datagrams(state.range(0) != 0);
  std::size_t i = 0;
  for (auto _ : state) {
    auto h = parse_quic_header(datagrams[i++ & 255], 8);
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_QuicParseHeader)->Arg(0)->Arg(1)->ArgName("long");

// A server flight: Initial + Handshake + short header in one datagram.
void BM_QuicCoalescedWalk(benchmark::State& state) {
  auto datagram = from_hex(quicstep::testing::kV1ServerInitial);
  const auto handshake = from_hex("e1 00000001 00 08 f067a5502a4262b5 1e");
  datagram.insert(datagram.end(), handshake.begin(), handshake.end());
  datagram.resize(datagram.size() + 30, 0x5a);
  const auto short_pkt = from_hex("43 00112233 445566778899aabbccddeeff0011223344");
  datagram.insert(datagram.end(), short_pkt.begin(), short_pkt.end());
  for (auto _ : state) {
    CoalescedPackets packets(datagram, 0);
    std::size_t n = 0;
    while (!packets.done()) {
      auto h = packets.next();
      if (!h) break;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * 3);
}
BENCHMARK(BM_QuicCoalescedWalk);

void BM_InitialDeriveKeys(benchmark::State& state) {
  const auto dcid = from_hex(quicstep::testing::kRfcDcid);
  for (auto _ : state) {
    auto keys = derive_initial_keys(kQuicV1, dcid, Perspective::client);
    benchmark::DoNotOptimize(keys);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InitialDeriveKeys)->Unit(benchmark::kMicrosecond);

// What the inspector pays per new connection: parse, derive from the packet's own DCID,
// remove header protection, decrypt 1162 bytes.
void BM_InitialDeriveAndDecrypt(benchmark::State& state) {
  const auto pkt = from_hex(quicstep::testing::kV1ClientInitial);
  std::vector<std::uint8_t> out(pkt.size());
  for (auto _ : state) {
    auto h = parse_quic_header(pkt, 0);
    auto keys = derive_initial_keys(h->version, h->dcid, Perspective::client);
    auto d = decrypt_initial(*h, *keys, std::nullopt, out);
    if (!d) state.SkipWithError("decrypt failed");
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(pkt.size()));
}
BENCHMARK(BM_InitialDeriveAndDecrypt)->Unit(benchmark::kMicrosecond);

void BM_InitialDecryptOnly(benchmark::State& state) {
  const auto pkt = from_hex(quicstep::testing::kV1ClientInitial);
  auto h = parse_quic_header(pkt, 0);
  auto keys = derive_initial_keys(h->version, h->dcid, Perspective::client);
  std::vector<std::uint8_t> out(pkt.size());
  for (auto _ : state) {
    auto d = decrypt_initial(*h, *keys, std::nullopt, out);
    if (!d) state.SkipWithError("decrypt failed");
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(pkt.size()));
}
BENCHMARK(BM_InitialDecryptOnly)->Unit(benchmark::kMicrosecond);

void BM_InitialProtect(benchmark::State& state) {
  const auto dcid = from_hex(quicstep::testing::kRfcDcid);
  const auto payload = quicstep::testing::rfc_client_payload();
  auto keys = derive_initial_keys(kQuicV1, dcid, Perspective::client);
  InitialPacketSpec spec;
  spec.dcid = dcid;
  spec.packet_number = 2;
  spec.payload = payload;
  for (auto _ : state) {
    auto pkt = protect_initial(spec, *keys);
    benchmark::DoNotOptimize(pkt);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InitialProtect)->Unit(benchmark::kMicrosecond);

}  // namespace
