// TlsRecordStream over arbitrary TCP segments. The input is a sequence of segments, each a
// 2-byte relative sequence number and a 1-byte length, then the payload. Checks: the
// handshake bytes never exceed the bound, errors are sticky, and a complete stream parses
// as a ClientHello or fails with an error other than incomplete.
#include <cstddef>
#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/tls_record_stream.hpp"

namespace {

using quicstep::common::ByteReader;
using quicstep::common::Bytes;
using quicstep::common::Error;
using quicstep::common::TlsRecordStream;

constexpr std::size_t kLimit = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader input(Bytes(data, size));
  TlsRecordStream stream(kLimit);
  bool failed = false;
  while (!input.empty()) {
    auto seq = input.u16();
    auto length = input.u8();
    if (!seq || !length) break;
    auto payload = input.bytes(*length);
    if (!payload) payload = input.bytes(input.remaining());
    auto status = stream.add_segment(*seq, *payload);
    if (failed && status) __builtin_trap();  // errors are sticky
    failed = failed || !status;
    if (stream.handshake().size() > kLimit) __builtin_trap();
  }
  auto hello = stream.client_hello();
  if (stream.complete() && !hello && hello.error() == Error::incomplete) __builtin_trap();
  if (!stream.complete() && hello) __builtin_trap();
  return 0;
}
