// Fuzzes the lab censor's decision core (lab/censor/censor_core.hpp) with a sequence of IP
// datagrams. Input: one config byte (bit 0 first-datagram-only, bit 1 block all QUIC, bit 2
// short-header-first, bit 3 half probability, bit 4 no TCP drop), then [u16 length][datagram]
// records decided 1 ms apart. The seed corpus holds the captures of tests/data in that
// format with several config bytes. Every injected packet must parse back as IP.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/byte_reader.hpp"
#include "common/ip_packet.hpp"
#include "lab/censor/censor_core.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace quicstep;
  if (size == 0) return 0;
  censor::CensorConfig config;
  config.first_datagram_only = (data[0] & 1) != 0;
  config.block_all_quic = (data[0] & 2) != 0;
  config.block_short_header_first = (data[0] & 4) != 0;
  config.block_probability = (data[0] & 8) != 0 ? 0.5 : 1.0;
  config.tcp_drop = (data[0] & 16) == 0;
  config.max_flows = 8;
  config.max_residual = 4;
  config.max_pending_decisions = 16;
  censor::Blocklist blocklist;
  blocklist.load("blocked.test\n*.blocked.test\n.localhost\n");
  censor::CensorCore core(config, std::move(blocklist), 42);
  common::ByteReader reader(common::Bytes(data + 1, size - 1));
  std::int64_t ns = 0;
  while (!reader.empty()) {
    auto datagram = reader.u16_prefixed();
    if (!datagram) break;
    auto verdict = core.decide(*datagram, common::Timestamp{ns += 1'000'000});
    for (const auto& packet : verdict.inject) {
      if (!common::parse_ip_packet(packet)) std::abort();  // what we inject must be valid
    }
    if (ns % 8'000'000 == 0) core.take_decisions();
  }
  return 0;
}
