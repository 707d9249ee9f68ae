#include "client/core/channel_health.hpp"

#include <algorithm>
#include <charconv>

namespace quicstep::client::core {
namespace {

using common::Failure;

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && !text.empty();
}

// The lines of `text`, without their '\n' (a last line without one included).
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

Failure bad_line(const char* what, std::string_view line) {
  return Failure(std::string(what) + ": `" + std::string(line) + "'");
}

}  // namespace

std::string_view to_string(ChannelHealth health) {
  switch (health) {
    case ChannelHealth::unknown: return "unknown";
    case ChannelHealth::down: return "down";
    case ChannelHealth::working: return "working";
    case ChannelHealth::idle: return "idle";
    case ChannelHealth::unanswered: return "unanswered";
  }
  return "unknown";
}

common::Result<WireGuardReading, Failure> parse_uapi_get(std::string_view text) {
  WireGuardReading r;
  bool ended = false;
  for (std::string_view line : lines_of(text)) {
    if (line.empty()) continue;  // the answer ends with an empty line
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) return bad_line("WireGuard UAPI: a line without '='", line);
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = line.substr(eq + 1);
    auto number = [&](auto& out) { return parse_number(value, out); };
    if (key == "public_key") {
      r.peers.push_back({std::string(value), 0, 0, 0});
    } else if (key == "errno") {
      int err = 0;
      if (!number(err)) return bad_line("WireGuard UAPI: errno is not a number", line);
      if (err != 0) return Failure("WireGuard UAPI: get failed with errno " + std::string(value));
      ended = true;
    } else if (!r.peers.empty() && (key == "last_handshake_time_sec" || key == "rx_bytes" ||
                                    key == "tx_bytes")) {
      WireGuardPeerReading& p = r.peers.back();
      const bool ok = key == "rx_bytes"   ? number(p.rx_bytes)
                      : key == "tx_bytes" ? number(p.tx_bytes)
                                          : number(p.last_handshake_s);
      if (!ok) return bad_line("WireGuard UAPI: not a number", line);
    }
  }
  if (!ended) return Failure("WireGuard UAPI: the answer ended before its errno line");
  return r;
}

common::Result<WireGuardReading, Failure> parse_wg_dump(std::string_view text) {
  WireGuardReading r;
  bool first = true;
  for (std::string_view line : lines_of(text)) {
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    for (std::string_view rest = line;;) {
      const auto tab = rest.find('\t');
      fields.push_back(rest.substr(0, tab));
      if (tab == std::string_view::npos) break;
      rest.remove_prefix(tab + 1);
    }
    if (first) {
      if (fields.size() != 4) return bad_line("wg show dump: not an interface line", line);
      first = false;
      continue;
    }
    if (fields.size() != 8) return bad_line("wg show dump: not a peer line", line);
    WireGuardPeerReading p{std::string(fields[0]), 0, 0, 0};
    if (!parse_number(fields[4], p.last_handshake_s) || !parse_number(fields[5], p.rx_bytes) ||
        !parse_number(fields[6], p.tx_bytes)) {
      return bad_line("wg show dump: not a number", line);
    }
    r.peers.push_back(std::move(p));
  }
  if (first) return Failure("wg show dump: no interface line");
  return r;
}

ChannelHealth ChannelHealthJudge::update(common::Timestamp now, std::int64_t unix_now_s,
                                         bool device_up,
                                         const std::optional<WireGuardReading>& reading) {
  const ChannelHealth before = state_;
  if (!device_up || !reading) {
    // Down, or unreadable: the counters start again with the next reading (a re-created
    // device starts at zero), and no silence is timed across the gap.
    state_ = device_up ? ChannelHealth::unknown : ChannelHealth::down;
    have_totals_ = false;
    sending_since_.reset();
    if (!device_up) handshake_age_s_.reset();
    return state_;
  }
  last_ = reading;
  std::uint64_t rx = 0, tx = 0;
  std::int64_t latest = 0;
  for (const auto& p : reading->peers) {
    rx += p.rx_bytes;
    tx += p.tx_bytes;
    latest = std::max(latest, p.last_handshake_s);
  }
  handshake_age_s_.reset();
  if (latest > 0) handshake_age_s_ = std::max<std::int64_t>(0, unix_now_s - latest);

  bool received = false;
  if (!have_totals_ || rx < rx_ || tx < tx_) {  // a first reading, or counters reset
    sending_since_.reset();
  } else if (rx > rx_) {
    received = true;
    sending_since_.reset();
  } else if (tx > tx_ && !sending_since_) {
    sending_since_ = now;
  }
  rx_ = rx;
  tx_ = tx;
  have_totals_ = true;

  // Unanswered stays until a byte comes back: the silence is timed from the first send.
  if (sending_since_ && now - *sending_since_ >= options_.unanswered_after) {
    state_ = ChannelHealth::unanswered;
  } else if (received || (handshake_age_s_ && *handshake_age_s_ <= options_.handshake_fresh_s)) {
    state_ = ChannelHealth::working;
  } else {
    state_ = ChannelHealth::idle;
  }
  if (state_ == ChannelHealth::unanswered && before != ChannelHealth::unanswered) {
    ++unanswered_episodes_;
  }
  return state_;
}

}  // namespace quicstep::client::core
