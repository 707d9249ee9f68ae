// Initial packet protection (RFC 9001 §5, RFC 9369 §3.3): keys derived from the client's
// Destination Connection ID, header-protection removal, packet-number recovery and
// AES-128-GCM decryption, plus the inverse (protect_initial) for tests and load generators,
// and the Retry integrity tag (RFC 9001 §5.8). Anyone can derive these keys: nothing here is
// secret, so nothing here is constant-time beyond what nettle gives for free.
//
// All primitives are nettle's (HKDF, HMAC-SHA256, AES-128, GCM).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/error.hpp"
#include "common/quic_header.hpp"
#include "common/quic_version.hpp"

namespace quicstep::common {

// Whose packets a set of Initial keys protects: the client's ("client in") or the
// server's ("server in"). Both are derived from the DCID of the client's first Initial.
enum class Perspective : std::uint8_t { client, server };

struct InitialKeys {
  std::uint32_t version = 0;
  Perspective sender = Perspective::client;
  std::array<std::uint8_t, 32> secret{};  // client_initial_secret or server_initial_secret
  std::array<std::uint8_t, 16> key{};     // AEAD_AES_128_GCM key
  std::array<std::uint8_t, 12> iv{};
  std::array<std::uint8_t, 16> hp{};      // AES-128 header-protection key
};

// HKDF-Expand-Label (RFC 8446 §7.1) with SHA-256 and an empty context; `label` without the
// "tls13 " prefix. Fills all of `out`. Errors: bad_value (label longer than 249 bytes, or
// out longer than 255 * 32 bytes).
Status hkdf_expand_label(Bytes secret, std::string_view label, std::span<std::uint8_t> out);

// initial_secret = HKDF-Extract(version's salt, dcid). Errors: unsupported (a version other
// than v1, v2, draft-29), bad_value (dcid longer than 20 bytes).
Result<std::array<std::uint8_t, 32>> derive_initial_secret(std::uint32_t version, Bytes dcid);

// The Initial keys that protect `sender`'s packets on a connection whose client chose `dcid`.
// Errors: those of derive_initial_secret.
Result<InitialKeys> derive_initial_keys(std::uint32_t version, Bytes dcid, Perspective sender);

// AES-based header protection (RFC 9001 §5.4.3): the first 5 bytes of AES-ECB(hp, sample).
std::array<std::uint8_t, 5> header_protection_mask(const std::array<std::uint8_t, 16>& hp,
                                                   std::span<const std::uint8_t, 16> sample);

// RFC 9000 §A.3: the full packet number closest to largest_pn + 1 whose low pn_nbits bits
// are `truncated`. largest_pn is nullopt before any packet of the space was processed.
// Preconditions: pn_nbits in {8, 16, 24, 32}; truncated < 2^pn_nbits; largest_pn < 2^62.
constexpr std::uint64_t decode_packet_number(std::optional<std::uint64_t> largest_pn,
                                             std::uint64_t truncated, unsigned pn_nbits) {
  const std::uint64_t expected = largest_pn ? *largest_pn + 1 : 0;
  const std::uint64_t win = std::uint64_t{1} << pn_nbits;
  const std::uint64_t hwin = win / 2;
  const std::uint64_t candidate = (expected & ~(win - 1)) | truncated;
  if (expected >= hwin && candidate <= expected - hwin &&
      candidate < (std::uint64_t{1} << 62) - win) {
    return candidate + win;
  }
  if (candidate > expected + hwin && candidate >= win) return candidate - win;
  return candidate;
}

struct DecryptedPacket {
  std::uint64_t packet_number = 0;
  std::size_t pn_length = 0;      // 1..4
  std::uint8_t first_byte = 0;    // without header protection
  std::uint8_t reserved_bits = 0; // (first_byte >> 2) & 3; a valid packet has 0 (RFC 9000 §17.2)
  Bytes header;                   // the unprotected header, i.e. the AAD: a view into `out`
  Bytes payload;                  // the plaintext frames: a view into `out`
};

// Removes header protection from the Initial packet `header` describes (header.packet, as
// parse_quic_header or CoalescedPackets returned it) and decrypts it. No allocation: the
// whole packet is copied into the caller's `out`, unprotected and decrypted there, so `out`
// needs at least header.packet.size() bytes; the views in the result point into it. On an
// error the content of `out` is unspecified. largest_pn is the largest packet number
// received so far in the Initial space (nullopt for the first packet).
//
// Errors:
//   unsupported     header is not an Initial of a known version
//   bad_value       keys.version differs from header.version
//   limit_exceeded  out is smaller than header.packet
//   truncated       the packet is too short for the header-protection sample
//                   (pn_offset + 4 + 16 bytes)
//   decrypt_failed  AEAD authentication failed: wrong keys, wrong perspective, tampering
Result<DecryptedPacket> decrypt_initial(const QuicHeader& header, const InitialKeys& keys,
                                        std::optional<std::uint64_t> largest_pn,
                                        std::span<std::uint8_t> out);

// What protect_initial builds.
struct InitialPacketSpec {
  Bytes dcid;
  Bytes scid;
  Bytes token;
  std::uint64_t packet_number = 0;
  std::size_t pn_length = 4;       // bytes of packet number on the wire, 1..4
  std::uint8_t reserved_bits = 0;  // 0..3; non-zero only to build invalid packets in tests
  bool fixed_bit = true;           // false to grease it (RFC 9287)
  Bytes payload;                   // the plaintext frames; PADDING is the caller's business
};

// Builds a protected Initial packet of keys.version with keys (the sender's): header, Length
// (shortest varint), AES-128-GCM payload, then header protection. The packet-number length
// is spec.pn_length whatever the packet number's size: receivers need the truncated value to
// be unambiguous (RFC 9000 §17.1), which is the caller's concern.
//
// Errors:
//   unsupported  keys.version is not v1, v2 or draft-29
//   bad_value    a CID longer than 20 bytes, pn_length not 1..4, reserved_bits > 3, or
//                packet_number >= 2^62
//   bad_length   payload too short for the header-protection sample (needs
//                pn_length + payload.size() >= 4)
Result<std::vector<std::uint8_t>> protect_initial(const InitialPacketSpec& spec,
                                                  const InitialKeys& keys);

// The Retry Integrity Tag (RFC 9001 §5.8, RFC 9369 §3.3.3) of a Retry packet given without
// its tag. Errors: unsupported (a version without published Retry keys: draft-29 and unknown
// versions), bad_value (original_dcid longer than 20 bytes).
Result<std::array<std::uint8_t, 16>> retry_integrity_tag(std::uint32_t version,
                                                         Bytes original_dcid,
                                                         Bytes retry_without_tag);

// Checks the tag of a parsed Retry against the DCID of the client's first Initial.
// Errors: unsupported (not a Retry, or as above), bad_value (as above), decrypt_failed
// (the tag does not match).
Status verify_retry_integrity(const QuicHeader& retry, Bytes original_dcid);

}  // namespace quicstep::common
