#include "net/clock.hpp"

#include <time.h>

namespace quicstep::net {

common::Timestamp monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return {static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
}

}  // namespace quicstep::net
