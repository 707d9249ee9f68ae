// Fuzzes HandshakeObserver with a sequence of IP datagrams: the input is a series of
// [u16 length][datagram] records, so flows span several packets (Initials reassembled
// across datagrams, TCP segments, Retry key changes). The seed corpus holds the real
// captures of tests/data converted to this format.
#include <cstddef>
#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/handshake_observer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace quicstep::common;
  HandshakeObserverConfig config;
  config.max_flows = 8;
  config.first_datagram_only = size > 0 && (data[0] & 1);
  HandshakeObserver observer(config);
  ByteReader reader(Bytes(data, size));
  std::int64_t ns = 0;
  while (!reader.empty()) {
    auto datagram = reader.u16_prefixed();
    if (!datagram) break;
    observer.observe(*datagram, Timestamp{ns += 1'000'000});
  }
  return 0;
}
