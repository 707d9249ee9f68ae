// ByteReader: the one bounds-checked reader under every parser of untrusted bytes.
// Every read returns a Result; a failed read consumes nothing. Multi-byte integers are
// network byte order (big-endian), loaded byte by byte, never through a cast pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/error.hpp"

namespace quicstep::common {

using Bytes = std::span<const std::uint8_t>;

class ByteReader {
 public:
  explicit ByteReader(Bytes data) : data_(data) {}

  std::size_t position() const { return pos_; }
  std::size_t remaining() const { return data_.size() - pos_; }
  bool empty() const { return pos_ == data_.size(); }

  // Errors: truncated when fewer bytes remain than the field needs.
  Result<std::uint8_t> u8();
  Result<std::uint16_t> u16();
  Result<std::uint32_t> u24();
  Result<std::uint32_t> u32();
  Result<std::uint64_t> u64();
  // A QUIC variable-length integer (RFC 9000 §16): 1, 2, 4 or 8 bytes.
  Result<std::uint64_t> varint();
  // The next n bytes, as a view into the input. Errors: truncated.
  Result<Bytes> bytes(std::size_t n);
  // An 8/16/24-bit length prefix, then that many bytes (TLS vectors). Errors: truncated.
  Result<Bytes> u8_prefixed();
  Result<Bytes> u16_prefixed();
  Result<Bytes> u24_prefixed();
  Status skip(std::size_t n);

  // The unread bytes, without consuming them.
  Bytes rest() const { return data_.subspan(pos_); }
  // The whole input this reader was made from.
  Bytes all() const { return data_; }

 private:
  Result<std::uint64_t> big_endian(std::size_t n);

  Bytes data_;
  std::size_t pos_ = 0;
};

// Length in bytes of a QUIC varint whose first byte is `first` (1, 2, 4 or 8).
constexpr std::size_t varint_length(std::uint8_t first) { return std::size_t{1} << (first >> 6); }

}  // namespace quicstep::common
