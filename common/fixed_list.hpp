// FixedList<T, N>: a list of at most N values stored inline, for parsers that must not
// allocate on the packet path. push_back refuses (returns false) once full; the caller turns
// that into Error::limit_exceeded.
#pragma once

#include <array>
#include <cstddef>
#include <span>

namespace quicstep::common {

template <typename T, std::size_t N>
class FixedList {
 public:
  static constexpr std::size_t capacity() { return N; }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == N; }

  // Appends `value`. Returns false, and stores nothing, when the list is full.
  [[nodiscard]] bool push_back(const T& value) {
    if (size_ == N) return false;
    items_[size_++] = value;
    return true;
  }
  void clear() { size_ = 0; }

  // Precondition: i < size().
  const T& operator[](std::size_t i) const { return items_[i]; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + size_; }
  std::span<const T> span() const { return {items_.data(), size_}; }

 private:
  std::array<T, N> items_{};
  std::size_t size_ = 0;
};

}  // namespace quicstep::common
