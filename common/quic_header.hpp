// QUIC packet headers as they appear on the wire before any decryption: long headers of v1,
// v2 and draft-29 (RFC 9000 §17.2, RFC 9369 §3.2), Version Negotiation and the
// version-independent fields of any other version (RFC 8999), and short headers (RFC 9000
// §17.3). A datagram may carry several coalesced packets (RFC 9000 §12.2):
// CoalescedPackets walks them. Header protection is not removed here, so the reserved bits,
// the packet-number length and the packet number stay unknown: see initial_protection.hpp.
//
// Every view in a QuicHeader points into the caller's datagram; it must outlive the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/byte_reader.hpp"
#include "common/error.hpp"
#include "common/quic_version.hpp"

namespace quicstep::common {

enum class QuicPacketKind : std::uint8_t {
  short_header,         // 1-RTT: only the DCID, of the length the caller knows
  long_header,          // a known version (v1, v2, draft-29): type, token, Length parsed
  version_negotiation,  // version 0: a list of versions follows the CIDs
  unknown_version,      // a long header of another version: RFC 8999 fields only
};

std::string_view to_string(QuicPacketKind kind);

struct QuicHeader {
  QuicPacketKind kind = QuicPacketKind::short_header;
  std::uint8_t first_byte = 0;  // as on the wire, header protection still applied
  bool fixed_bit = false;       // 0x40; may be 0 when greased (RFC 9287): recorded, not rejected
  std::uint32_t version = 0;    // long headers only (0 for Version Negotiation and short headers)
  std::optional<LongPacketType> type;  // set for kind == long_header only

  Bytes dcid;
  Bytes scid;  // long headers only
  // Initial: the token (may be empty). Retry: the Retry token. Empty otherwise.
  Bytes token;
  // Retry: the 16-byte Retry Integrity Tag. Empty otherwise.
  Bytes retry_integrity_tag;
  // Version Negotiation: the supported versions, 4 bytes each (see version_at()).
  Bytes supported_versions;

  // Initial, 0-RTT, Handshake: the Length field (packet number + protected payload).
  std::uint64_t length = 0;
  // Initial, 0-RTT, Handshake and short headers: offset of the packet number from the first
  // byte of the packet. 0 for the other kinds.
  std::size_t pn_offset = 0;

  // The bytes of this packet alone, from its first byte; its size is the packet's length in
  // the datagram. Long headers with a Length field end where Length says; short headers,
  // Retry, Version Negotiation and unknown versions take the rest of the datagram.
  Bytes packet;

  bool is_long() const { return kind != QuicPacketKind::short_header; }
  bool has_packet_number() const { return pn_offset != 0; }
  std::size_t version_count() const { return supported_versions.size() / 4; }
  // Precondition: i < version_count().
  std::uint32_t version_at(std::size_t i) const;
};

// --- Fast paths for the classifier: no parsing beyond the first bytes. ---

constexpr bool is_long_header(std::uint8_t first_byte) { return (first_byte & 0x80) != 0; }
constexpr bool has_fixed_bit(std::uint8_t first_byte) { return (first_byte & 0x40) != 0; }

enum class FirstByteClass : std::uint8_t { empty, short_header, long_header };

// Looks at the first byte only. Never fails.
constexpr FirstByteClass classify_first_byte(Bytes datagram) {
  if (datagram.empty()) return FirstByteClass::empty;
  return is_long_header(datagram[0]) ? FirstByteClass::long_header : FirstByteClass::short_header;
}

// The Version field of a long header. Errors: bad_value (a short header), truncated (fewer
// than 5 bytes).
Result<std::uint32_t> peek_quic_version(Bytes datagram);

// --- Full header parsing. ---

// Parses the packet that starts at datagram_part[0], in the manner of quiche's
// Header::from_slice. short_dcid_len is the DCID length of short headers, which the wire
// does not carry (the length this endpoint or this flow uses, 0..20).
//
// Errors:
//   truncated    the input ends inside a field, or before the end that Length announces,
//                or a Retry has fewer than 16 bytes for its tag
//   bad_value    a CID longer than 20 bytes in a v1/v2/draft-29 long header, or
//                short_dcid_len > 20
//   bad_length   a Version Negotiation list whose size is not a multiple of 4
Result<QuicHeader> parse_quic_header(Bytes datagram_part, std::size_t short_dcid_len);

// Walks the packets coalesced in one UDP datagram:
//
//   CoalescedPackets packets(datagram, dcid_len);
//   while (!packets.done()) {
//     auto header = packets.next();
//     if (!header) break;  // header.error(); the iterator is now done()
//     ...
//   }
//
// A packet without a Length field (short header, Retry, Version Negotiation, unknown
// version) takes the rest of the datagram, so it is always the last. A zero byte of padding
// after the last long-header packet parses as a short header with fixed_bit == false.
class CoalescedPackets {
 public:
  CoalescedPackets(Bytes datagram, std::size_t short_dcid_len)
      : datagram_(datagram), short_dcid_len_(short_dcid_len) {}

  // True when every byte has been consumed or an error stopped the walk.
  bool done() const { return failed_ || offset_ >= datagram_.size(); }
  // Offset in the datagram of the next packet.
  std::size_t offset() const { return offset_; }

  // Precondition: !done(). Errors: those of parse_quic_header; after an error, done().
  Result<QuicHeader> next();

 private:
  Bytes datagram_;
  std::size_t short_dcid_len_;
  std::size_t offset_ = 0;
  bool failed_ = false;
};

}  // namespace quicstep::common
