// parse_client_hello over arbitrary handshake bytes. Beyond "no crash", it checks what
// callers rely on: every view lies inside the input, the SNI is a plausible lower-case host
// name, incomplete agrees with client_hello_needed_length, and parsing a prefix of a
// message never succeeds.
#include <cstddef>
#include <cstdint>

#include "common/tls_client_hello.hpp"
#include "fuzz_checks.hpp"

namespace {

using quicstep::common::Bytes;
using quicstep::common::ClientHello;
using quicstep::common::Error;

using quicstep::fuzz::check_inside;

void check(Bytes input, const ClientHello& h) {
  if (h.message_length > input.size()) __builtin_trap();
  if (h.random.size() != 32 || h.session_id.size() > 32) __builtin_trap();
  for (Bytes b : {h.random, h.session_id, h.cipher_suites, h.compression_methods,
                  h.quic_transport_parameters}) {
    check_inside(input, b);
  }
  for (Bytes p : h.alpn) {
    if (p.empty()) __builtin_trap();
    check_inside(input, p);
  }
  for (const auto& k : h.key_shares) check_inside(input, k.key_exchange);
  if (h.has_server_name != !h.server_name().empty()) __builtin_trap();
  if (h.has_server_name && !quicstep::common::is_plausible_host_name(h.server_name())) __builtin_trap();
  for (char c : h.server_name()) {
    if (c >= 'A' && c <= 'Z') __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes input(data, size);
  auto hello = quicstep::common::parse_client_hello(input);
  auto needed = quicstep::common::client_hello_needed_length(input);
  if (hello) {
    check(input, *hello);
    if (!needed || *needed != hello->message_length) __builtin_trap();
    // No strict prefix of a parsed message parses.
    if (quicstep::common::parse_client_hello(input.first(hello->message_length - 1))) __builtin_trap();
  } else if (hello.error() == Error::incomplete) {
    if (!needed || *needed <= size) __builtin_trap();
  }
  return 0;
}
