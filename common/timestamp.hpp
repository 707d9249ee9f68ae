// Time as the sans-IO core sees it: passed in by the caller, never read from a clock here.
// The one time type of the tree: frontends read their clock once per event
// (net::monotonic_now) and pass a Timestamp in; durations are std::chrono durations
// (Duration). Two kinds of time stay outside it, each for its reason: the code that drives
// ngtcp2 speaks ngtcp2_tstamp (quic/time.hpp), and tokens carry wall-clock time
// (server_testbed/address_validator.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

namespace quicstep::common {

using Duration = std::chrono::nanoseconds;

// A point in time, in nanoseconds since an epoch the caller chooses (capture time, a
// monotonic clock, a simulation). Only differences between Timestamps are meaningful.
struct Timestamp {
  std::int64_t ns = 0;

  // Later than any real time: "no deadline".
  static constexpr Timestamp never() { return {std::numeric_limits<std::int64_t>::max()}; }

  // From and to unsigned nanoseconds on the same clock (ngtcp2_tstamp), where UINT64_MAX
  // means "no deadline" and maps to never() and back.
  static constexpr Timestamp from_unsigned_ns(std::uint64_t ns) {
    return ns >= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? never()
               : Timestamp{static_cast<std::int64_t>(ns)};
  }
  constexpr std::uint64_t unsigned_ns() const {
    return *this == never() ? std::numeric_limits<std::uint64_t>::max()
                            : static_cast<std::uint64_t>(ns);
  }

  friend constexpr auto operator<=>(Timestamp, Timestamp) = default;
  friend constexpr Timestamp operator+(Timestamp t, Duration d) { return {t.ns + d.count()}; }
  friend constexpr Duration operator-(Timestamp a, Timestamp b) { return Duration(a.ns - b.ns); }
};

}  // namespace quicstep::common
