// monotonic_now: the one clock of the frontends. The sans-IO cores never read a clock
// (common/timestamp.hpp); a frontend reads this once per event and passes the Timestamp in.
// CLOCK_MONOTONIC, in nanoseconds: the same clock and unit as ngtcp2_tstamp and
// std::chrono::steady_clock here, so Timestamps from either agree.
#pragma once

#include "common/timestamp.hpp"

namespace quicstep::net {

common::Timestamp monotonic_now();

}  // namespace quicstep::net
