#include "common/quic_version.hpp"

namespace quicstep::common {
namespace {

// Type bits indexed by LongPacketType {initial, zero_rtt, handshake, retry}.
constexpr std::array<std::uint8_t, 4> kV1TypeBits{0b00, 0b01, 0b10, 0b11};  // RFC 9000 §17.2
constexpr std::array<std::uint8_t, 4> kV2TypeBits{0b01, 0b10, 0b11, 0b00};  // RFC 9369 §3.2

constexpr QuicVersionInfo kVersions[] = {
    {
        kQuicV1,
        // RFC 9001 §5.2
        {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
         0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a},
        "quic key",
        "quic iv",
        "quic hp",
        "quic ku",
        kV1TypeBits,
        true,
        // RFC 9001 §5.8
        {0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68,
         0xc8, 0x4e},
        {0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb},
    },
    {
        kQuicV2,
        // RFC 9369 §3.3.1
        {0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
         0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9},
        "quicv2 key",
        "quicv2 iv",
        "quicv2 hp",
        "quicv2 ku",
        kV2TypeBits,
        true,
        // RFC 9369 §3.3.3
        {0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c,
         0xcc, 0x92},
        {0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a},
    },
    {
        kQuicDraft29,
        // draft-ietf-quic-tls-29 §5.2; still sent by some old clients.
        {0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97,
         0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99},
        "quic key",
        "quic iv",
        "quic hp",
        "quic ku",
        kV1TypeBits,
        false,
        {},
        {},
    },
};

}  // namespace

std::string_view to_string(LongPacketType type) {
  switch (type) {
    case LongPacketType::initial: return "initial";
    case LongPacketType::zero_rtt: return "0rtt";
    case LongPacketType::handshake: return "handshake";
    case LongPacketType::retry: return "retry";
  }
  return "unknown";
}

const QuicVersionInfo* find_quic_version(std::uint32_t version) {
  for (const QuicVersionInfo& info : kVersions) {
    if (info.version == version) return &info;
  }
  return nullptr;
}

std::optional<LongPacketType> long_packet_type(std::uint32_t version, std::uint8_t first_byte) {
  const QuicVersionInfo* info = find_quic_version(version);
  if (info == nullptr) return std::nullopt;
  const std::uint8_t bits = (first_byte >> 4) & 0x03;
  for (std::uint8_t t = 0; t < 4; ++t) {
    if (info->type_bits[t] == bits) return static_cast<LongPacketType>(t);
  }
  return std::nullopt;  // unreachable: each table is a permutation of 0..3
}

std::optional<std::uint8_t> long_type_bits(std::uint32_t version, LongPacketType type) {
  const QuicVersionInfo* info = find_quic_version(version);
  if (info == nullptr) return std::nullopt;
  return info->type_bits[static_cast<std::size_t>(type)];
}

}  // namespace quicstep::common
