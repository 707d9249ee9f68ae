// Untrusted bytes of the Retry gate: a universal token as it arrives in an Initial (verified
// against a fixed master key, client address and DCID taken from the input too), and the
// gate → worker forward message. Properties: no crash, no read outside the input; a token
// that verifies round-trips its ODCID length bound; a decoded message's packet view lies
// inside the message.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "server_testbed/gate_forward.hpp"
#include "server_testbed/token/universal_token.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

namespace qt = quicstep::server_testbed::token;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static qt::TokenCodec codec =
      qt::TokenCodec::create(std::vector<std::uint8_t>(32, 9), {}).value();
  if (size < 2) return 0;
  // octet 0: address family and DCID length; the rest: DCID, then the token.
  qt::ClientAddress client;
  client.family = (data[0] & 0x80) ? 6 : 4;
  const std::size_t dcid_len = data[0] % 22;  // 21: one past the limit
  const std::uint8_t* rest = data + 1;
  std::size_t rest_len = size - 1;
  if (rest_len < dcid_len) return 0;
  std::span<const std::uint8_t> dcid(rest, dcid_len);
  std::span<const std::uint8_t> token(rest + dcid_len, rest_len - dcid_len);
  qt::VerifiedToken v;
  const auto verdict = codec.verify(token, client, dcid, 1'780'000'000'000ull, &v);
  if (verdict == qt::Verdict::valid && v.odcid_len > qt::kMaxCidLen) __builtin_trap();

  auto msg = quicstep::server_testbed::decode_forward({data, size});
  if (msg) {
    quicstep::fuzz::check_inside({data, size}, msg->packet);
    quicstep::fuzz::touch(msg->packet);
    if (msg->odcid_len > 20) __builtin_trap();
  }
  return 0;
}
