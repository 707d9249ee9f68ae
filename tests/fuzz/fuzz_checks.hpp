// Property checks shared by the fuzz targets: views a parser returns must lie inside its
// input, and reading them must be safe (ASan sees the reads).
#pragma once

#include <cstdint>

#include "common/byte_reader.hpp"

namespace quicstep::fuzz {

// Traps when `inner` (non-empty) is not a sub-span of `outer`.
inline void check_inside(common::Bytes outer, common::Bytes inner) {
  if (inner.empty()) return;
  if (inner.data() < outer.data() || inner.data() + inner.size() > outer.data() + outer.size()) {
    __builtin_trap();
  }
}

inline volatile std::uint8_t sink;

// Reads every byte of `b`, so that a view past its buffer is caught by ASan.
inline void touch(common::Bytes b) {
  std::uint8_t x = 0;
  for (std::uint8_t v : b) x ^= v;
  sink = x;
}

}  // namespace quicstep::fuzz
