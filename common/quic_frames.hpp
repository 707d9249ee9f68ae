// Frames of a decrypted QUIC Initial packet payload (RFC 9000 §12.4, §19).
//
// An Initial packet may carry only PADDING, PING, ACK, CRYPTO and CONNECTION_CLOSE of type
// 0x1c (RFC 9000 Table 3); any other frame type there is a PROTOCOL_VIOLATION, reported as
// Error::bad_value. Input is the plaintext payload after header protection removal and AEAD
// decryption; this module does no cryptography and owns no bytes: CRYPTO data and
// CONNECTION_CLOSE reasons are views into the caller's payload, valid as long as it is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/error.hpp"
#include "common/fixed_list.hpp"

namespace quicstep::common {

enum class QuicFrameType : std::uint8_t {
  padding = 0x00,
  ping = 0x01,
  ack = 0x02,
  ack_ecn = 0x03,
  crypto = 0x06,
  connection_close = 0x1c,
};

// A piece of the CRYPTO stream: `data` belongs at byte `offset` of the stream.
struct CryptoFragment {
  std::uint64_t offset = 0;
  Bytes data;
};

// An ACK frame's summary. The ranges are checked (no packet number below 0) but not kept.
struct AckFrame {
  std::uint64_t largest_acknowledged = 0;
  std::uint64_t ack_delay = 0;  // raw, not scaled by ack_delay_exponent
  std::uint64_t range_count = 0;  // ACK Range Count: ranges after the first
  std::uint64_t smallest_acknowledged = 0;  // lowest packet number the ranges cover
  bool ecn = false;  // type 0x03: the three counts below are meaningful
  std::uint64_t ect0 = 0;
  std::uint64_t ect1 = 0;
  std::uint64_t ecn_ce = 0;
};

struct ConnectionCloseFrame {
  std::uint64_t error_code = 0;
  std::uint64_t frame_type = 0;  // the frame that triggered the error, 0 if unknown
  Bytes reason;                  // UTF-8 by convention; not validated
};

// One frame. Only the member matching `type` is meaningful.
struct QuicFrame {
  QuicFrameType type = QuicFrameType::padding;
  std::size_t padding_length = 0;  // padding: the length of the whole run of 0x00 bytes
  AckFrame ack;                    // ack, ack_ecn
  CryptoFragment crypto;           // crypto
  ConnectionCloseFrame close;      // connection_close
};

// Walks the frames of one payload, in order. A run of PADDING bytes is one frame.
class QuicFrameReader {
 public:
  explicit QuicFrameReader(Bytes payload) : reader_(payload) {}

  bool done() const { return reader_.empty(); }
  std::size_t position() const { return reader_.position(); }

  // The next frame. Precondition: !done(). On error the reader does not advance.
  // Errors: truncated (a field or the CRYPTO data / reason runs past the payload);
  // bad_value (a frame type not allowed in an Initial packet, including non-minimal
  // encodings of allowed types; ACK ranges that go below packet number 0; a CRYPTO frame
  // whose offset + length exceeds 2^62 - 1).
  Result<QuicFrame> next();

 private:
  ByteReader reader_;
};

// Up to this many CRYPTO frames in one Initial payload. Chromium splits its ClientHello into
// a handful per packet; a 1,500-byte packet could hold ~300 empty ones, which no real client
// sends.
inline constexpr std::size_t kMaxCryptoFragmentsPerPacket = 32;

// What one Initial payload carried.
struct InitialFrames {
  FixedList<CryptoFragment, kMaxCryptoFragmentsPerPacket> crypto;  // in payload order
  std::size_t frame_count = 0;    // every frame, a PADDING run counting as one
  std::size_t padding_bytes = 0;
  bool ping = false;
  bool ack = false;
  bool connection_close = false;
  // Whether the packet needs acknowledging (RFC 9002 §2: anything but ACK, PADDING and
  // CONNECTION_CLOSE).
  bool ack_eliciting = false;
};

// Parses every frame of a decrypted Initial payload.
// Errors: as QuicFrameReader::next; bad_value for an empty payload (RFC 9000 §12.4: a
// packet carries at least one frame); limit_exceeded for more than
// kMaxCryptoFragmentsPerPacket CRYPTO frames.
Result<InitialFrames> parse_initial_frames(Bytes payload);

}  // namespace quicstep::common
