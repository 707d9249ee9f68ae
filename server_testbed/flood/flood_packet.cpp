#include "server_testbed/flood/flood_packet.hpp"

#include "common/byte_writer.hpp"
#include "common/initial_protection.hpp"
#include "common/quic_version.hpp"
#include "server_testbed/flood/client_hello_writer.hpp"

namespace quicstep::server_testbed::flood {

namespace {

using common::ByteWriter;
using common::Bytes;
using common::Error;
using common::IpFamily;

constexpr std::uint32_t kQuicV1 = 0x00000001;
constexpr std::size_t kAeadTag = 16;
constexpr std::size_t kPnLength = 2;

std::vector<std::uint8_t> random_vector(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

std::size_t varint_length(std::uint64_t v) {
  return v < 64 ? 1 : v < 16384 ? 2 : v < (1u << 30) ? 4 : 8;
}

// Bytes of the long header up to (not including) the Length field.
std::size_t header_prefix(std::size_t dcid, std::size_t scid, std::size_t token) {
  return 1 + 4 + 1 + dcid + 1 + scid + varint_length(token) + token;
}

// RFC 1071 sum of `data`, continuing `sum`.
std::uint32_t sum16(Bytes data, std::uint32_t sum) {
  std::size_t i = 0;
  for (; i + 1 < data.size(); i += 2) sum += static_cast<std::uint32_t>(data[i] << 8 | data[i + 1]);
  if (i < data.size()) sum += static_cast<std::uint32_t>(data[i] << 8);
  return sum;
}

std::uint16_t fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

// The IP header, then `l4` with its checksum (at l4_checksum_offset) computed over the
// pseudo-header.
std::vector<std::uint8_t> frame(const Endpoints& ends, std::uint8_t protocol,
                                std::vector<std::uint8_t> l4, std::size_t l4_checksum_offset) {
  const bool v4 = ends.src.family == IpFamily::v4;
  std::uint32_t pseudo = sum16(ends.src.octets(), 0);
  pseudo = sum16(ends.dst.octets(), pseudo);
  pseudo += protocol;
  pseudo += static_cast<std::uint32_t>(l4.size() & 0xffff) + static_cast<std::uint32_t>(l4.size() >> 16);
  std::uint16_t check = fold(sum16(l4, pseudo));
  if (protocol == common::kIpProtoUdp && check == 0) check = 0xffff;  // RFC 768
  l4[l4_checksum_offset] = static_cast<std::uint8_t>(check >> 8);
  l4[l4_checksum_offset + 1] = static_cast<std::uint8_t>(check);

  ByteWriter w;
  if (v4) {
    w.u8(0x45).u8(0).u16(static_cast<std::uint16_t>(20 + l4.size()));
    w.u16(0).u16(0x4000);  // id 0, DF
    w.u8(64).u8(protocol).u16(0);
    w.bytes(ends.src.octets()).bytes(ends.dst.octets());
    auto& buf = w.buffer();
    const std::uint16_t hc = fold(sum16(Bytes(buf.data(), 20), 0));
    buf[10] = static_cast<std::uint8_t>(hc >> 8);
    buf[11] = static_cast<std::uint8_t>(hc);
  } else {
    w.u32(0x60000000u).u16(static_cast<std::uint16_t>(l4.size())).u8(protocol).u8(64);
    w.bytes(ends.src.octets()).bytes(ends.dst.octets());
  }
  w.bytes(l4);
  return w.take();
}

common::Result<std::vector<std::uint8_t>> garbage_payload(const QuicFloodSpec& spec,
                                                          std::mt19937_64& rng) {
  const std::size_t dcid_len =
      spec.min_dcid_length + rng() % (spec.max_dcid_length - spec.min_dcid_length + 1);
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(0xc0 | (rng() & 0x0f))).u32(kQuicV1);
  w.u8(static_cast<std::uint8_t>(dcid_len)).bytes(random_vector(dcid_len, rng));
  w.u8(8).bytes(random_vector(8, rng));
  w.varint(0);  // no token
  const std::size_t used = w.size() + 2;
  const std::size_t rest = spec.datagram_size > used + 20 ? spec.datagram_size - used : 20;
  w.varint_fixed(rest, 2).bytes(random_vector(rest, rng));
  return w.take();
}

}  // namespace

common::Result<FloodVariant> parse_variant(std::string_view text) {
  for (auto v : {FloodVariant::initial, FloodVariant::garbage, FloodVariant::replay,
                 FloodVariant::forged, FloodVariant::syn}) {
    if (text == to_string(v)) return v;
  }
  return Error::bad_value;
}

std::string_view to_string(FloodVariant variant) {
  switch (variant) {
    case FloodVariant::initial: return "initial";
    case FloodVariant::garbage: return "garbage";
    case FloodVariant::replay: return "replay";
    case FloodVariant::forged: return "forged";
    case FloodVariant::syn: return "syn";
  }
  return "?";
}

common::Outcome check_spec(const QuicFloodSpec& spec) {
  auto fail = [](const char* reason) -> common::Outcome { return common::Failure(reason); };
  if (spec.min_dcid_length < 1 || spec.max_dcid_length > 20 ||
      spec.min_dcid_length > spec.max_dcid_length) {
    return fail("DCID lengths must satisfy 1 <= min <= max <= 20");
  }
  if (spec.variant == FloodVariant::replay && spec.token.empty()) {
    return fail("replay needs a captured token");
  }
  if (spec.forged_token_length < 1 || spec.forged_token_length > 512) {
    return fail("forged token length must be 1..512");
  }
  if (spec.datagram_size < 1200 || spec.datagram_size > 1472) {
    return fail("datagram size must be 1200..1472");
  }
  return {};
}

common::Result<std::vector<std::uint8_t>> build_quic_payload(const QuicFloodSpec& spec,
                                                             std::mt19937_64& rng) {
  if (spec.variant == FloodVariant::garbage) return garbage_payload(spec, rng);
  const std::size_t dcid_len =
      spec.min_dcid_length + rng() % (spec.max_dcid_length - spec.min_dcid_length + 1);
  const auto dcid = random_vector(dcid_len, rng);
  const auto scid = random_vector(8, rng);
  std::vector<std::uint8_t> token;
  if (spec.variant == FloodVariant::replay) token = spec.token;
  if (spec.variant == FloodVariant::forged) token = random_vector(spec.forged_token_length, rng);

  const auto hello = write_client_hello({spec.server_name, scid}, rng);
  ByteWriter frames;
  frames.u8(0x06).varint(0).varint(hello.size()).bytes(hello);  // CRYPTO, offset 0
  const std::size_t fixed =
      header_prefix(dcid_len, scid.size(), token.size()) + 2 + kPnLength + kAeadTag;
  if (fixed + frames.size() < spec.datagram_size) {
    frames.buffer().resize(spec.datagram_size - fixed, 0x00);  // PADDING
  }
  auto keys = common::derive_initial_keys(kQuicV1, dcid, common::Perspective::client);
  if (!keys) return keys.error();
  common::InitialPacketSpec packet;
  packet.dcid = dcid;
  packet.scid = scid;
  packet.token = token;
  packet.packet_number = 0;
  packet.pn_length = kPnLength;
  packet.payload = frames.buffer();
  return common::protect_initial(packet, *keys);
}

std::vector<std::uint8_t> frame_udp(const Endpoints& ends, Bytes payload) {
  ByteWriter udp;
  udp.u16(ends.src_port).u16(ends.dst_port).u16(static_cast<std::uint16_t>(8 + payload.size()));
  udp.u16(0).bytes(payload);
  return frame(ends, common::kIpProtoUdp, udp.take(), 6);
}

std::vector<std::uint8_t> frame_tcp_syn(const Endpoints& ends, std::uint32_t seq) {
  ByteWriter tcp;
  tcp.u16(ends.src_port).u16(ends.dst_port).u32(seq).u32(0);
  tcp.u8(static_cast<std::uint8_t>(8 << 4)).u8(0x02).u16(64240).u16(0).u16(0);  // 32-byte header
  tcp.u8(2).u8(4).u16(1460);          // MSS
  tcp.u8(4).u8(2);                    // SACK permitted
  tcp.u8(1).u8(3).u8(3).u8(7);        // NOP, window scale 7
  tcp.u8(1).u8(1).u8(1).u8(1);        // NOP padding to 12 option bytes
  return frame(ends, common::kIpProtoTcp, tcp.take(), 16);
}

}  // namespace quicstep::server_testbed::flood
