// Coalesced-packet iteration and header parsing over arbitrary bytes. Beyond "no crash", it
// checks what callers rely on: every view lies inside the datagram, each packet consumes at
// least one byte, and v1/v2 CIDs never exceed 20 bytes.
#include <cstddef>
#include <cstdint>

#include "common/quic_header.hpp"
#include "fuzz_checks.hpp"

namespace {

using quicstep::common::Bytes;
using quicstep::common::CoalescedPackets;
using quicstep::common::QuicHeader;
using quicstep::common::QuicPacketKind;

using quicstep::fuzz::check_inside;
using quicstep::fuzz::sink;
using quicstep::fuzz::touch;

void walk(Bytes datagram, std::size_t short_dcid_len) {
  CoalescedPackets packets(datagram, short_dcid_len);
  std::size_t count = 0;
  while (!packets.done()) {
    const std::size_t before = packets.offset();
    auto header = packets.next();
    if (!header) break;
    const QuicHeader& h = *header;
    if (h.packet.empty() || packets.offset() != before + h.packet.size()) __builtin_trap();
    if (++count > datagram.size()) __builtin_trap();
    for (Bytes part : {h.packet, h.dcid, h.scid, h.token, h.retry_integrity_tag,
                       h.supported_versions}) {
      check_inside(h.packet, part);
      touch(part);
    }
    if (h.kind == QuicPacketKind::long_header && (h.dcid.size() > 20 || h.scid.size() > 20)) {
      __builtin_trap();
    }
    if (h.has_packet_number() && h.pn_offset > h.packet.size()) __builtin_trap();
    for (std::size_t i = 0; i < h.version_count(); ++i) sink = static_cast<std::uint8_t>(h.version_at(i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes datagram(data, size);
  (void)quicstep::common::classify_first_byte(datagram);
  (void)quicstep::common::peek_quic_version(datagram);
  walk(datagram, 0);
  walk(datagram, 8);
  walk(datagram, size % 21);
  return 0;
}
