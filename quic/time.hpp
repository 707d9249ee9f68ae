// ngtcp2_tstamp, and its conversions to the tree's one time type. ngtcp2 takes and returns
// its own type on every call (unsigned nanoseconds; here always CLOCK_MONOTONIC, UINT64_MAX
// for "no deadline"), so the code that drives ngtcp2 connections — quic/, the server's
// connections and workers, the prober's and the load generator's connections and loops —
// keeps ngtcp2_tstamp rather than converting at every call. Everything else uses
// common::Timestamp (common/timestamp.hpp); the two meet through these functions, on the
// same clock (net::monotonic_now).
#pragma once

#include <ngtcp2/ngtcp2.h>

#include "common/timestamp.hpp"
#include "net/clock.hpp"

namespace quicstep::quic {

// The clock of the ngtcp2 loops.
inline ngtcp2_tstamp now() { return net::monotonic_now().unsigned_ns(); }

inline common::Timestamp from_ngtcp2(ngtcp2_tstamp t) {
  return common::Timestamp::from_unsigned_ns(t);
}
inline ngtcp2_tstamp to_ngtcp2(common::Timestamp t) { return t.unsigned_ns(); }

}  // namespace quicstep::quic
