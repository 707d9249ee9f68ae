// QUIC versions this library knows, and what differs between them: the long-header packet
// type bits (RFC 9369 §3.2 remaps them for v2), the Initial salt and the HKDF labels
// (RFC 9001 §5, RFC 9369 §3.3), and the Retry integrity key and nonce (RFC 9001 §5.8,
// RFC 9369 §3.3.3). Everything else about a version lives in the parsers that use this table.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace quicstep::common {

inline constexpr std::uint32_t kQuicVersionNegotiation = 0x00000000;  // RFC 8999 §6
inline constexpr std::uint32_t kQuicV1 = 0x00000001;                  // RFC 9000
inline constexpr std::uint32_t kQuicV2 = 0x6b3343cf;                  // RFC 9369 §3.1
inline constexpr std::uint32_t kQuicDraft29 = 0xff00001d;             // draft-ietf-quic-tls-29

// The largest connection ID of v1, v2 and draft-29 (RFC 9000 §17.2). Other versions may use
// up to 255 bytes (RFC 8999 §5.1).
inline constexpr std::size_t kMaxCidLength = 20;

// Long-header packet types, independent of how a version encodes them on the wire.
enum class LongPacketType : std::uint8_t { initial, zero_rtt, handshake, retry };

std::string_view to_string(LongPacketType type);

// What a known version uses for its Initial keys and its Retry integrity tag.
struct QuicVersionInfo {
  std::uint32_t version;
  std::array<std::uint8_t, 20> initial_salt;
  // HKDF-Expand-Label labels, without the "tls13 " prefix.
  std::string_view key_label;  // "quic key" / "quicv2 key"
  std::string_view iv_label;   // "quic iv"  / "quicv2 iv"
  std::string_view hp_label;   // "quic hp"  / "quicv2 hp"
  std::string_view ku_label;   // "quic ku"  / "quicv2 ku"
  // Wire type bits (the two bits 0x30 of the first byte, shifted down), indexed by
  // LongPacketType.
  std::array<std::uint8_t, 4> type_bits;
  // Retry integrity AEAD key and nonce; has_retry_keys is false where no published test
  // vector lets us check them (draft-29).
  bool has_retry_keys;
  std::array<std::uint8_t, 16> retry_key;
  std::array<std::uint8_t, 12> retry_nonce;
};

// The table entry of a known version (v1, v2, draft-29), or nullptr for any other version,
// including Version Negotiation (0) and reserved/greased versions.
const QuicVersionInfo* find_quic_version(std::uint32_t version);

inline bool is_known_quic_version(std::uint32_t version) {
  return find_quic_version(version) != nullptr;
}

// RFC 9000 §15: versions of the form 0x?a?a?a?a are reserved to exercise version negotiation.
constexpr bool is_reserved_quic_version(std::uint32_t version) {
  return (version & 0x0f0f0f0fu) == 0x0a0a0a0au;
}

// The packet type a long header's first byte encodes under `version`; nullopt when the
// version is not known (its type bits mean nothing to us).
std::optional<LongPacketType> long_packet_type(std::uint32_t version, std::uint8_t first_byte);

// The wire type bits (0..3) of `type` under `version`; nullopt when the version is not known.
std::optional<std::uint8_t> long_type_bits(std::uint32_t version, LongPacketType type);

}  // namespace quicstep::common
