// Initial decryption of arbitrary datagrams, as a censor or the router's inspector would do
// it: for every Initial of a known version, derive both perspectives' keys from the packet's
// own DCID and try to decrypt. Must never crash. Then a round trip: protect the input's tail
// as an Initial payload and check that it decrypts back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/initial_protection.hpp"

namespace {

using namespace quicstep::common;

void try_decrypt(const QuicHeader& h, std::vector<std::uint8_t>& out) {
  if (h.kind != QuicPacketKind::long_header || h.type != LongPacketType::initial) return;
  for (Perspective sender : {Perspective::client, Perspective::server}) {
    auto keys = derive_initial_keys(h.version, h.dcid, sender);
    if (!keys) __builtin_trap();  // parse_quic_header caps v1/v2 DCIDs at 20
    out.resize(h.packet.size());
    auto d = decrypt_initial(h, *keys, std::nullopt, out);
    if (d && (d->pn_length < 1 || d->pn_length > 4 ||
              d->header.size() + d->payload.size() + 16 != h.packet.size())) {
      __builtin_trap();
    }
  }
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return;
  const std::uint32_t versions[] = {kQuicV1, kQuicV2, kQuicDraft29};
  const std::uint32_t version = versions[data[0] % 3];
  const std::size_t dcid_len = data[1] % 21;
  const std::size_t pn_length = (data[2] & 3) + 1;
  if (size < 3 + dcid_len) return;
  const Bytes dcid(data + 3, dcid_len);
  const Bytes payload(data + 3 + dcid_len, size - 3 - dcid_len);
  auto keys = derive_initial_keys(version, dcid, Perspective::client);
  if (!keys) __builtin_trap();
  InitialPacketSpec spec;
  spec.dcid = dcid;
  spec.packet_number = data[2] >> 2;
  spec.pn_length = pn_length;
  spec.payload = payload;
  auto packet = protect_initial(spec, *keys);
  if (!packet) {
    if (pn_length + payload.size() >= 4) __builtin_trap();
    return;
  }
  auto h = parse_quic_header(*packet, 0);
  if (!h) __builtin_trap();
  std::vector<std::uint8_t> out(packet->size());
  auto d = decrypt_initial(*h, *keys, std::nullopt, out);
  if (!d || d->packet_number != spec.packet_number || d->payload.size() != payload.size() ||
      (!payload.empty() && std::memcmp(d->payload.data(), payload.data(), payload.size()) != 0)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> out;
  CoalescedPackets packets(Bytes(data, size), 0);
  while (!packets.done()) {
    auto h = packets.next();
    if (!h) break;
    try_decrypt(*h, out);
  }
  round_trip(data, size);
  return 0;
}
