#include "common/byte_reader.hpp"

namespace quicstep::common {

Result<std::uint64_t> ByteReader::big_endian(std::size_t n) {
  if (remaining() < n) return Error::truncated;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | data_[pos_ + i];
  pos_ += n;
  return v;
}

Result<std::uint8_t> ByteReader::u8() {
  if (empty()) return Error::truncated;
  return data_[pos_++];
}

Result<std::uint16_t> ByteReader::u16() {
  auto v = big_endian(2);
  if (!v) return v.error();
  return static_cast<std::uint16_t>(*v);
}

Result<std::uint32_t> ByteReader::u24() {
  auto v = big_endian(3);
  if (!v) return v.error();
  return static_cast<std::uint32_t>(*v);
}

Result<std::uint32_t> ByteReader::u32() {
  auto v = big_endian(4);
  if (!v) return v.error();
  return static_cast<std::uint32_t>(*v);
}

Result<std::uint64_t> ByteReader::u64() { return big_endian(8); }

Result<std::uint64_t> ByteReader::varint() {
  if (empty()) return Error::truncated;
  const std::size_t n = varint_length(data_[pos_]);
  if (remaining() < n) return Error::truncated;
  std::uint64_t v = data_[pos_] & 0x3f;
  for (std::size_t i = 1; i < n; ++i) v = (v << 8) | data_[pos_ + i];
  pos_ += n;
  return v;
}

Result<Bytes> ByteReader::bytes(std::size_t n) {
  if (remaining() < n) return Error::truncated;
  Bytes out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

Result<Bytes> ByteReader::u8_prefixed() {
  const std::size_t start = pos_;
  auto n = u8();
  if (!n) return n.error();
  auto b = bytes(*n);
  if (!b) pos_ = start;
  return b;
}

Result<Bytes> ByteReader::u16_prefixed() {
  const std::size_t start = pos_;
  auto n = u16();
  if (!n) return n.error();
  auto b = bytes(*n);
  if (!b) pos_ = start;
  return b;
}

Result<Bytes> ByteReader::u24_prefixed() {
  const std::size_t start = pos_;
  auto n = u24();
  if (!n) return n.error();
  auto b = bytes(*n);
  if (!b) pos_ = start;
  return b;
}

Status ByteReader::skip(std::size_t n) {
  if (remaining() < n) return Error::truncated;
  pos_ += n;
  return {};
}

}  // namespace quicstep::common
