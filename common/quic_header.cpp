#include "common/quic_header.hpp"

namespace quicstep::common {
namespace {

// DCID and SCID of a long header. v1/v2/draft-29 cap them at 20 bytes; Version Negotiation
// and unknown versions allow 255 (RFC 8999 §5.1).
Status read_cids(ByteReader& r, QuicHeader& h, std::size_t max_len) {
  auto dcid = r.u8_prefixed();
  if (!dcid) return dcid.error();
  if (dcid->size() > max_len) return Error::bad_value;
  auto scid = r.u8_prefixed();
  if (!scid) return scid.error();
  if (scid->size() > max_len) return Error::bad_value;
  h.dcid = *dcid;
  h.scid = *scid;
  return {};
}

// Version Negotiation: the rest of the datagram is a list of 4-byte versions.
Status read_version_negotiation(ByteReader& r, QuicHeader& h) {
  if (r.remaining() % 4 != 0) return Error::bad_length;
  h.supported_versions = r.rest();
  return {};
}

// Retry: a token up to the last 16 bytes, then the integrity tag (RFC 9000 §17.2.5).
Status read_retry(ByteReader& r, QuicHeader& h) {
  constexpr std::size_t kTagLength = 16;
  if (r.remaining() < kTagLength) return Error::truncated;
  h.token = *r.bytes(r.remaining() - kTagLength);
  h.retry_integrity_tag = *r.bytes(kTagLength);
  return {};
}

// Initial, 0-RTT, Handshake: [token,] Length, then the protected packet number and payload.
Status read_length_and_pn(ByteReader& r, QuicHeader& h) {
  if (h.type == LongPacketType::initial) {
    auto token_len = r.varint();
    if (!token_len) return token_len.error();
    auto token = r.bytes(*token_len);  // a huge varint simply does not fit: truncated
    if (!token) return token.error();
    h.token = *token;
  }
  auto length = r.varint();
  if (!length) return length.error();
  if (*length > r.remaining()) return Error::truncated;
  h.length = *length;
  h.pn_offset = r.position();
  return {};
}

// Fills h from the Version field on. h.first_byte is set.
Status parse_long_header(ByteReader& r, QuicHeader& h) {
  auto version = r.u32();
  if (!version) return version.error();
  h.version = *version;
  if (h.version == kQuicVersionNegotiation) {
    h.kind = QuicPacketKind::version_negotiation;
    if (Status s = read_cids(r, h, 255); !s) return s;
    if (Status s = read_version_negotiation(r, h); !s) return s;
    h.packet = r.all();
    return {};
  }
  h.type = long_packet_type(h.version, h.first_byte);
  if (!h.type) {
    h.kind = QuicPacketKind::unknown_version;
    if (Status s = read_cids(r, h, 255); !s) return s;
    h.packet = r.all();
    return {};
  }
  h.kind = QuicPacketKind::long_header;
  if (Status s = read_cids(r, h, kMaxCidLength); !s) return s;
  if (*h.type == LongPacketType::retry) {
    if (Status s = read_retry(r, h); !s) return s;
    h.packet = r.all();
    return {};
  }
  if (Status s = read_length_and_pn(r, h); !s) return s;
  h.packet = r.all().first(h.pn_offset + h.length);
  return {};
}

}  // namespace

std::string_view to_string(QuicPacketKind kind) {
  switch (kind) {
    case QuicPacketKind::short_header: return "short_header";
    case QuicPacketKind::long_header: return "long_header";
    case QuicPacketKind::version_negotiation: return "version_negotiation";
    case QuicPacketKind::unknown_version: return "unknown_version";
  }
  return "unknown";
}

std::uint32_t QuicHeader::version_at(std::size_t i) const {
  const Bytes v = supported_versions.subspan(i * 4, 4);
  return (std::uint32_t{v[0]} << 24) | (std::uint32_t{v[1]} << 16) | (std::uint32_t{v[2]} << 8) |
         std::uint32_t{v[3]};
}

Result<std::uint32_t> peek_quic_version(Bytes datagram) {
  ByteReader r(datagram);
  auto first = r.u8();
  if (!first) return first.error();
  if (!is_long_header(*first)) return Error::bad_value;
  return r.u32();
}

Result<QuicHeader> parse_quic_header(Bytes datagram_part, std::size_t short_dcid_len) {
  if (short_dcid_len > kMaxCidLength) return Error::bad_value;
  ByteReader r(datagram_part);
  auto first = r.u8();
  if (!first) return first.error();
  Result<QuicHeader> result{QuicHeader{}};
  QuicHeader& h = *result;
  h.first_byte = *first;
  h.fixed_bit = has_fixed_bit(*first);
  if (is_long_header(*first)) {
    if (Status s = parse_long_header(r, h); !s) return s.error();
    return result;
  }
  h.kind = QuicPacketKind::short_header;
  auto dcid = r.bytes(short_dcid_len);
  if (!dcid) return dcid.error();
  h.dcid = *dcid;
  h.pn_offset = r.position();
  h.packet = datagram_part;
  return result;
}

Result<QuicHeader> CoalescedPackets::next() {
  auto header = parse_quic_header(datagram_.subspan(offset_), short_dcid_len_);
  if (!header) {
    failed_ = true;
    return header.error();
  }
  offset_ += header->packet.size();
  return header;
}

}  // namespace quicstep::common
