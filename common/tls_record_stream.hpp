// TlsRecordStream: the handshake bytes a TCP client sends first, rebuilt from its segments.
//
// A TLS-over-TCP ClientHello arrives as TCP segments (split anywhere, even inside a 5-byte
// record header, out of order, retransmitted with overlap) carrying TLS records (RFC 8446
// §5.1) that may split the ClientHello across several records. This class reassembles the
// TCP byte stream by sequence number, strips record headers, and exposes the handshake
// bytes, ready for parse_client_hello. It stops once the ClientHello is complete: what the
// client sends afterwards (ChangeCipherSpec, early data) is not its business.
//
// Memory: at most max_bytes() of TCP payload plus max_bytes() of handshake bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/crypto_reassembly.hpp"
#include "common/error.hpp"
#include "common/tls_client_hello.hpp"

namespace quicstep::common {

inline constexpr std::uint8_t kTlsContentHandshake = 22;
inline constexpr std::size_t kTlsRecordHeaderLength = 5;
inline constexpr std::size_t kMaxTlsPlaintextLength = 16384;  // 2^14, RFC 8446 §5.1
inline constexpr std::size_t kDefaultTlsStreamLimit = 16 * 1024;

class TlsRecordStream {
 public:
  explicit TlsRecordStream(std::size_t max_bytes = kDefaultTlsStreamLimit);

  // Adds one TCP segment's payload. `relative_seq` is the segment's sequence number minus
  // the sequence number of the connection's first data byte (ISN + 1), modulo 2^32. Bytes
  // past max_bytes() are dropped here, not refused: they may be early data sent after the
  // ClientHello. Once the ClientHello is complete, segments are ignored.
  // Errors (sticky: every later call returns the first one):
  //   unsupported     the stream starts with an SSLv2-compatible hello (first bit set);
  //   bad_value       a record that is not handshake (content type 22) before the
  //                   ClientHello is complete, a record version not 3.x, an empty handshake
  //                   record, a handshake message that is not a ClientHello, or a segment
  //                   that contradicts bytes received earlier;
  //   limit_exceeded  the ClientHello cannot complete within max_bytes() (its length says
  //                   so, or the stream filled up first);
  //   bad_length      a record longer than 2^14 bytes.
  Status add_segment(std::uint32_t relative_seq, Bytes payload);

  // The handshake bytes de-framed so far, in order. Invalidated by the next add_segment().
  Bytes handshake() const { return Bytes(handshake_.data(), handshake_.size()); }
  // Whether handshake() holds a whole ClientHello (parse it with client_hello()).
  bool complete() const { return complete_; }
  // parse_client_hello(handshake()): incomplete until complete().
  Result<ClientHello> client_hello() const { return parse_client_hello(handshake()); }
  std::size_t max_bytes() const { return max_bytes_; }

 private:
  Status deframe();
  Status check_header(Bytes partial_record);
  Status fail(Error error);

  std::size_t max_bytes_;
  CryptoReassembler tcp_;                 // TCP payload bytes by relative sequence number
  std::size_t record_offset_ = 0;         // offset in tcp_ of the next record header
  std::vector<std::uint8_t> handshake_;   // de-framed handshake bytes
  bool complete_ = false;
  bool failed_ = false;
  Error error_ = Error::bad_value;
};

}  // namespace quicstep::common
