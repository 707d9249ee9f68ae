// Time as the sans-IO core sees it: passed in by the caller, never read from a clock here.
#pragma once

#include <chrono>
#include <cstdint>

namespace quicstep::common {

using Duration = std::chrono::nanoseconds;

// A point in time, in nanoseconds since an epoch the caller chooses (capture time, a
// monotonic clock, a simulation). Only differences between Timestamps are meaningful.
struct Timestamp {
  std::int64_t ns = 0;

  friend constexpr auto operator<=>(Timestamp, Timestamp) = default;
  friend constexpr Timestamp operator+(Timestamp t, Duration d) { return {t.ns + d.count()}; }
  friend constexpr Duration operator-(Timestamp a, Timestamp b) { return Duration(a.ns - b.ns); }
};

}  // namespace quicstep::common
