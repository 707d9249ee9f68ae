// ByteWriter: appends big-endian fields to a growing buffer. Used by encoders (tests'
// packet builders, tokens, forged answers); never on untrusted input.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace quicstep::common {

class ByteWriter {
 public:
  ByteWriter& u8(std::uint8_t v);
  ByteWriter& u16(std::uint16_t v);
  ByteWriter& u24(std::uint32_t v);
  ByteWriter& u32(std::uint32_t v);
  ByteWriter& u64(std::uint64_t v);
  // Shortest QUIC varint encoding. Precondition: v < 2^62.
  ByteWriter& varint(std::uint64_t v);
  // A varint of exactly `length` bytes (1, 2, 4 or 8). Precondition: v fits.
  ByteWriter& varint_fixed(std::uint64_t v, std::size_t length);
  ByteWriter& bytes(std::span<const std::uint8_t> b);

  std::size_t size() const { return buf_.size(); }
  std::vector<std::uint8_t>& buffer() { return buf_; }
  std::vector<std::uint8_t> take() { return std::move(buf_); }

 private:
  std::vector<std::uint8_t> buf_;
};

}  // namespace quicstep::common
