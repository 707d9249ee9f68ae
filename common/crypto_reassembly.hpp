// CryptoReassembler: rebuilds one connection's CRYPTO stream (one encryption level) from
// fragments that arrive in any order, overlapping or duplicated, inside a fixed bound.
//
// A browser's post-quantum ClientHello (X25519MLKEM768, ~1.8 KB) spans two or more Initial
// packets, and Chromium splits and reorders CRYPTO frames even inside one packet, so the
// SNI can only be read once the stream's prefix is contiguous. The same reassembler serves
// any byte stream addressed by offset (TlsRecordStream uses it for TCP payload bytes).
//
// Memory: the buffer grows with the highest byte received, never past max_bytes(); a
// received-byte bitmap of max_bytes()/8 bytes is allocated on first use. Nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::common {

// The default bound on one connection's Initial CRYPTO stream. A ClientHello with a
// post-quantum key share and ECH is ~2 KB; 16 KiB leaves room for odd clients.
inline constexpr std::size_t kDefaultCryptoStreamLimit = 16 * 1024;

class CryptoReassembler {
 public:
  explicit CryptoReassembler(std::size_t max_bytes = kDefaultCryptoStreamLimit);

  // Adds `data` at stream offset `offset`. Bytes already received are compared, not
  // rewritten. An empty fragment is accepted and changes nothing. On error nothing changes.
  // Errors: limit_exceeded (offset + data.size() > max_bytes());
  // bad_value (a byte differs from one received earlier at the same offset: a client never
  // sends that, an evasion attempt does).
  Status add(std::uint64_t offset, Bytes data);

  // The stream from offset 0 up to the first byte not yet received. The view is invalidated
  // by the next add() or reset().
  Bytes contiguous() const { return Bytes(buffer_.data(), contiguous_); }
  std::size_t contiguous_length() const { return contiguous_; }
  // One past the highest offset received so far (0 before any data).
  std::size_t end_offset() const { return buffer_.size(); }
  // Whether bytes beyond the contiguous prefix are held, waiting for a gap to fill.
  bool has_gaps() const { return contiguous_ < buffer_.size(); }
  std::size_t max_bytes() const { return max_bytes_; }

  // Forgets all data; keeps the bound.
  void reset();

 private:
  bool received(std::size_t i) const { return (bitmap_[i / 64] >> (i % 64)) & 1U; }
  void mark(std::size_t begin, std::size_t end);
  bool conflicts(std::size_t offset, Bytes data) const;

  std::size_t max_bytes_;
  std::size_t contiguous_ = 0;
  std::vector<std::uint8_t> buffer_;     // size() == end_offset()
  std::vector<std::uint64_t> bitmap_;    // bit i set: byte i received
};

}  // namespace quicstep::common
