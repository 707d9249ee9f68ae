// LossCounter: packet losses of one QUIC connection, read from ngtcp2's qlog events (sans-IO:
// it is fed the text ngtcp2 writes through settings.qlog.write).
//   declared_lost: our packets that ngtcp2's loss detection declared lost
//                  ("recovery:packet_lost"): the client→server direction.
//   missing:       packet numbers of the peer's 1-RTT packets that never arrived
//                  ("transport:packet_received": gaps in the sequence, minus late arrivals):
//                  the server→client direction.
// Header-only (it is small, and quicstep-load and the unit tests share it).
// ngtcp2 0.12.1 exposes neither figure through its API (ngtcp2_conn_stat has no loss count).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>

namespace quicstep::server_testbed {

struct LossCounts {
  std::uint64_t declared_lost = 0;
  std::uint64_t missing = 0;
  std::uint64_t received = 0;  // peer's 1-RTT packets received
};

class LossCounter {
 public:
  // One qlog write: one or more complete events.
  void feed(std::string_view qlog);
  const LossCounts& counts() const { return counts_; }

 private:
  void on_received(std::uint64_t pn);
  LossCounts counts_;
  std::int64_t highest_ = -1;  // highest 1-RTT packet number received
};

namespace loss_counter_detail {

constexpr std::string_view kLost = "\"name\":\"recovery:packet_lost\"";
constexpr std::string_view kReceived = "\"name\":\"transport:packet_received\"";
constexpr std::string_view kType = "\"packet_type\":\"";
constexpr std::string_view kNumber = "\"packet_number\":";

// The value of "packet_type" and "packet_number" in the event starting at `event`.
inline bool header_of(std::string_view event, std::string_view* type, std::uint64_t* pn) {
  const auto t = event.find(kType);
  const auto n = event.find(kNumber);
  if (t == std::string_view::npos || n == std::string_view::npos) return false;
  const auto type_begin = t + kType.size();
  const auto type_end = event.find('"', type_begin);
  if (type_end == std::string_view::npos) return false;
  *type = event.substr(type_begin, type_end - type_begin);
  const char* first = event.data() + n + kNumber.size();
  return std::from_chars(first, event.data() + event.size(), *pn).ec == std::errc();
}

}  // namespace loss_counter_detail

inline void LossCounter::feed(std::string_view qlog) {
  for (std::size_t pos = 0; pos < qlog.size();) {
    using namespace loss_counter_detail;
    const auto lost = qlog.find(kLost, pos);
    const auto received = qlog.find(kReceived, pos);
    const auto at = std::min(lost, received);
    if (at == std::string_view::npos) return;
    // The event ends where the next one starts (or at the end of this write).
    const auto next = qlog.find("\"name\":", at + 1);
    const std::string_view event = qlog.substr(at, next == std::string_view::npos ? qlog.npos : next - at);
    std::string_view type;
    std::uint64_t pn = 0;
    if (at == lost) {
      ++counts_.declared_lost;
    } else if (loss_counter_detail::header_of(event, &type, &pn) && type == "1RTT") {
      on_received(pn);
    }
    pos = at + 1;
  }
}

inline void LossCounter::on_received(std::uint64_t pn) {
  ++counts_.received;
  const auto p = static_cast<std::int64_t>(pn);
  if (p > highest_) {
    counts_.missing += static_cast<std::uint64_t>(p - highest_ - 1);
    highest_ = p;
  } else if (counts_.missing > 0) {
    --counts_.missing;  // a late (reordered) arrival fills one gap
  }
}

}  // namespace quicstep::server_testbed
