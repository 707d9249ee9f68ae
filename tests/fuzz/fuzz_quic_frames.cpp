// The QUIC path from decrypted Initial payloads to the SNI: frames → CRYPTO reassembly →
// ClientHello. The input is a sequence of payloads, each prefixed with a 2-byte length, so
// the fuzzer can split a ClientHello across packets and reorder it. Checks: CRYPTO views
// lie inside their payload, the reassembler never holds more than its bound, and its
// contiguous prefix only grows.
#include <cstddef>
#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/crypto_reassembly.hpp"
#include "common/quic_frames.hpp"
#include "common/tls_client_hello.hpp"
#include "fuzz_checks.hpp"

namespace {

using quicstep::common::ByteReader;
using quicstep::common::Bytes;
using quicstep::common::CryptoReassembler;

constexpr std::size_t kLimit = 4096;  // small, so the fuzzer reaches the bound

using quicstep::fuzz::check_inside;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader input(Bytes(data, size));
  CryptoReassembler stream(kLimit);
  while (!input.empty()) {
    auto payload = input.u16_prefixed();
    if (!payload) payload = input.bytes(input.remaining());
    auto frames = quicstep::common::parse_initial_frames(*payload);
    if (!frames) continue;  // a bad packet is dropped; the connection goes on
    for (const auto& fragment : frames->crypto) {
      check_inside(*payload, fragment.data);
      const std::size_t before = stream.contiguous_length();
      (void)stream.add(fragment.offset, fragment.data);
      if (stream.contiguous_length() < before || stream.end_offset() > kLimit) __builtin_trap();
      if (stream.contiguous_length() > stream.end_offset()) __builtin_trap();
    }
  }
  auto hello = quicstep::common::parse_client_hello(stream.contiguous());
  if (hello && hello->message_length > stream.contiguous_length()) __builtin_trap();
  return 0;
}
