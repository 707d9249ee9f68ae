// ClientHello parsing and the QUIC path to the SNI, on a Chrome-shaped post-quantum
// ClientHello (~1.75 KB, X25519MLKEM768 key share) and the small RFC 8448 one, side by side.
#include <benchmark/benchmark.h>

#include "common/crypto_reassembly.hpp"
#include "common/quic_frames.hpp"
#include "common/tls_client_hello.hpp"
#include "support/client_hello_builder.hpp"
#include "support/rfc_client_hellos.hpp"

namespace {

using quicstep::common::Bytes;
using quicstep::test::ByteVector;
using quicstep::test::ClientHelloBuilder;

void parse(benchmark::State& state, const ByteVector& message) {
  for (auto _ : state) {
    auto hello = quicstep::common::parse_client_hello(message);
    benchmark::DoNotOptimize(hello);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * message.size()));
}

void BM_ParseClientHelloChromePostQuantum(benchmark::State& state) {
  parse(state, ClientHelloBuilder::chrome_quic("www.example.com").shuffle_extensions(5).build());
}
BENCHMARK(BM_ParseClientHelloChromePostQuantum);

void BM_ParseClientHelloRfc8448(benchmark::State& state) {
  parse(state, quicstep::test::rfc8448_client_hello());
}
BENCHMARK(BM_ParseClientHelloRfc8448);

// Two Initial payloads → frames → reassembly → ClientHello, as the classifier would run it.
void BM_InitialPayloadsToSni(benchmark::State& state) {
  const ByteVector hello = ClientHelloBuilder::chrome_quic("www.example.com").build();
  const Bytes h(hello);
  ByteVector first = quicstep::test::crypto_frame(0, h.first(1100));
  first.resize(1162, 0x00);
  ByteVector second = quicstep::test::crypto_frame(1100, h.subspan(1100));
  second.resize(1162, 0x00);
  for (auto _ : state) {
    quicstep::common::CryptoReassembler stream;
    for (const ByteVector* payload : {&first, &second}) {
      auto frames = quicstep::common::parse_initial_frames(*payload);
      for (const auto& f : frames->crypto) (void)stream.add(f.offset, f.data);
    }
    auto parsed = quicstep::common::parse_client_hello(stream.contiguous());
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK(BM_InitialPayloadsToSni);

}  // namespace
