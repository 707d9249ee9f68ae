#include "common/crypto_reassembly.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace quicstep::common {

CryptoReassembler::CryptoReassembler(std::size_t max_bytes) : max_bytes_(max_bytes) {}

void CryptoReassembler::reset() {
  contiguous_ = 0;
  buffer_.clear();
  std::fill(bitmap_.begin(), bitmap_.end(), 0);
}

bool CryptoReassembler::conflicts(std::size_t offset, Bytes data) const {
  const std::size_t held_end = std::min(offset + data.size(), buffer_.size());
  for (std::size_t i = offset; i < held_end; ++i) {
    if (received(i) && buffer_[i] != data[i - offset]) return true;
  }
  return false;
}

void CryptoReassembler::mark(std::size_t begin, std::size_t end) {
  while (begin < end) {
    const std::size_t bit = begin % 64;
    const std::size_t n = std::min<std::size_t>(64 - bit, end - begin);
    const std::uint64_t ones = n == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1);
    bitmap_[begin / 64] |= ones << bit;
    begin += n;
  }
}

Status CryptoReassembler::add(std::uint64_t offset, Bytes data) {
  if (data.empty()) return {};
  if (offset > max_bytes_ || data.size() > max_bytes_ - offset) return Error::limit_exceeded;
  const auto begin = static_cast<std::size_t>(offset);
  const std::size_t end = begin + data.size();
  if (conflicts(begin, data)) return Error::bad_value;

  if (bitmap_.empty()) bitmap_.assign((max_bytes_ + 63) / 64, 0);
  if (end > buffer_.size()) {
    // Grow geometrically but never past the bound (vector's own growth could double it).
    if (end > buffer_.capacity()) {
      buffer_.reserve(std::min(max_bytes_, std::max(end, 2 * buffer_.capacity())));
    }
    buffer_.resize(end);
  }
  // Overlapping bytes are equal (checked above), so copying over them changes nothing.
  std::memcpy(buffer_.data() + begin, data.data(), data.size());
  mark(begin, end);

  while (contiguous_ < buffer_.size()) {
    const std::size_t shift = contiguous_ % 64;
    const std::uint64_t word = bitmap_[contiguous_ / 64] >> shift;
    const auto run = static_cast<std::size_t>(std::countr_one(word));
    contiguous_ += run;
    if (run < 64 - shift) break;  // stopped at a byte not yet received
  }
  contiguous_ = std::min(contiguous_, buffer_.size());
  return {};
}

}  // namespace quicstep::common
