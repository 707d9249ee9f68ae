#include "common/byte_writer.hpp"

namespace quicstep::common {

ByteWriter& ByteWriter::u8(std::uint8_t v) {
  buf_.push_back(v);
  return *this;
}

ByteWriter& ByteWriter::u16(std::uint16_t v) { return u8(v >> 8).u8(v & 0xff); }
ByteWriter& ByteWriter::u24(std::uint32_t v) { return u8((v >> 16) & 0xff).u16(v & 0xffff); }
ByteWriter& ByteWriter::u32(std::uint32_t v) { return u16(v >> 16).u16(v & 0xffff); }
ByteWriter& ByteWriter::u64(std::uint64_t v) { return u32(v >> 32).u32(v & 0xffffffff); }

ByteWriter& ByteWriter::varint(std::uint64_t v) {
  if (v < 64) return varint_fixed(v, 1);
  if (v < 16384) return varint_fixed(v, 2);
  if (v < (1u << 30)) return varint_fixed(v, 4);
  return varint_fixed(v, 8);
}

ByteWriter& ByteWriter::varint_fixed(std::uint64_t v, std::size_t length) {
  switch (length) {
    case 1: return u8(static_cast<std::uint8_t>(v));
    case 2: return u16(static_cast<std::uint16_t>(v | 0x4000));
    case 4: return u32(static_cast<std::uint32_t>(v | 0x80000000u));
    default: return u64(v | 0xc000000000000000ull);
  }
}

ByteWriter& ByteWriter::bytes(std::span<const std::uint8_t> b) {
  buf_.insert(buf_.end(), b.begin(), b.end());
  return *this;
}

}  // namespace quicstep::common
