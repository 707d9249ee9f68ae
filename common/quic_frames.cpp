#include "common/quic_frames.hpp"

namespace quicstep::common {
namespace {

// RFC 9000 §16: the largest value a varint holds, and the bound on any stream offset.
constexpr std::uint64_t kMaxVarint = (std::uint64_t{1} << 62) - 1;

// ACK and ACK_ECN (RFC 9000 §19.3). Each range is checked against packet number 0.
Result<AckFrame> read_ack(ByteReader& r, bool ecn) {
  AckFrame ack;
  ack.ecn = ecn;
  auto largest = r.varint();
  if (!largest) return largest.error();
  auto delay = r.varint();
  if (!delay) return delay.error();
  auto count = r.varint();
  if (!count) return count.error();
  auto first = r.varint();
  if (!first) return first.error();
  ack.largest_acknowledged = *largest;
  ack.ack_delay = *delay;
  ack.range_count = *count;
  if (*first > *largest) return Error::bad_value;
  std::uint64_t smallest = *largest - *first;
  // Each range takes at least two bytes, so the loop ends at the payload's end even when
  // the count is absurd.
  for (std::uint64_t i = 0; i < *count; ++i) {
    auto gap = r.varint();
    if (!gap) return gap.error();
    auto length = r.varint();
    if (!length) return length.error();
    // The next range's largest is smallest - gap - 2 (§19.3.1), and its length must fit.
    if (smallest < *gap + 2) return Error::bad_value;
    const std::uint64_t range_largest = smallest - *gap - 2;
    if (*length > range_largest) return Error::bad_value;
    smallest = range_largest - *length;
  }
  ack.smallest_acknowledged = smallest;
  if (ecn) {
    auto ect0 = r.varint();
    if (!ect0) return ect0.error();
    auto ect1 = r.varint();
    if (!ect1) return ect1.error();
    auto ce = r.varint();
    if (!ce) return ce.error();
    ack.ect0 = *ect0;
    ack.ect1 = *ect1;
    ack.ecn_ce = *ce;
  }
  return ack;
}

// CRYPTO (RFC 9000 §19.6).
Result<CryptoFragment> read_crypto(ByteReader& r) {
  auto offset = r.varint();
  if (!offset) return offset.error();
  auto length = r.varint();
  if (!length) return length.error();
  if (*length > kMaxVarint - *offset) return Error::bad_value;
  if (*length > r.remaining()) return Error::truncated;
  auto data = r.bytes(static_cast<std::size_t>(*length));
  if (!data) return data.error();
  return CryptoFragment{*offset, *data};
}

// CONNECTION_CLOSE of type 0x1c (RFC 9000 §19.19).
Result<ConnectionCloseFrame> read_connection_close(ByteReader& r) {
  auto code = r.varint();
  if (!code) return code.error();
  auto frame_type = r.varint();
  if (!frame_type) return frame_type.error();
  auto reason_length = r.varint();
  if (!reason_length) return reason_length.error();
  if (*reason_length > r.remaining()) return Error::truncated;
  auto reason = r.bytes(static_cast<std::size_t>(*reason_length));
  if (!reason) return reason.error();
  return ConnectionCloseFrame{*code, *frame_type, *reason};
}

std::size_t padding_run(Bytes rest) {
  std::size_t n = 0;
  while (n < rest.size() && rest[n] == 0x00) ++n;
  return n;
}

}  // namespace

Result<QuicFrame> QuicFrameReader::next() {
  ByteReader r = reader_;  // committed only on success
  auto type_byte = r.u8();
  if (!type_byte) return type_byte.error();
  QuicFrame frame;
  // Every type allowed here has a one-byte encoding; a first byte >= 0x40 is either another
  // type or a longer-than-necessary encoding, both forbidden (RFC 9000 §12.4).
  switch (*type_byte) {
    case 0x00: {
      frame.type = QuicFrameType::padding;
      frame.padding_length = 1 + padding_run(r.rest());
      if (!r.skip(frame.padding_length - 1)) return Error::truncated;
      break;
    }
    case 0x01:
      frame.type = QuicFrameType::ping;
      break;
    case 0x02:
    case 0x03: {
      const bool ecn = *type_byte == 0x03;
      frame.type = ecn ? QuicFrameType::ack_ecn : QuicFrameType::ack;
      auto ack = read_ack(r, ecn);
      if (!ack) return ack.error();
      frame.ack = *ack;
      break;
    }
    case 0x06: {
      frame.type = QuicFrameType::crypto;
      auto crypto = read_crypto(r);
      if (!crypto) return crypto.error();
      frame.crypto = *crypto;
      break;
    }
    case 0x1c: {
      frame.type = QuicFrameType::connection_close;
      auto close = read_connection_close(r);
      if (!close) return close.error();
      frame.close = *close;
      break;
    }
    default:
      return Error::bad_value;
  }
  reader_ = r;
  return frame;
}

Result<InitialFrames> parse_initial_frames(Bytes payload) {
  if (payload.empty()) return Error::bad_value;
  InitialFrames out;
  QuicFrameReader frames(payload);
  while (!frames.done()) {
    auto frame = frames.next();
    if (!frame) return frame.error();
    ++out.frame_count;
    switch (frame->type) {
      case QuicFrameType::padding:
        out.padding_bytes += frame->padding_length;
        break;
      case QuicFrameType::ping:
        out.ping = true;
        out.ack_eliciting = true;
        break;
      case QuicFrameType::ack:
      case QuicFrameType::ack_ecn:
        out.ack = true;
        break;
      case QuicFrameType::crypto:
        if (!out.crypto.push_back(frame->crypto)) return Error::limit_exceeded;
        out.ack_eliciting = true;
        break;
      case QuicFrameType::connection_close:
        out.connection_close = true;
        break;
    }
  }
  return out;
}

}  // namespace quicstep::common
