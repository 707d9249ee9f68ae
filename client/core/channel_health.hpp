// ChannelHealth: tells a working handshake channel from a dead one, from what WireGuard
// itself knows — the latest handshake's age and its transfer counters — read every second
// (wireguard_reading.hpp). Sans-IO: readings and the time come in; the state goes out.
//
// WireGuard's timers make silence meaningful: a peer that receives data and has nothing to
// send answers with a keepalive within 10 s (KEEPALIVE_TIMEOUT), and a sender that hears
// nothing for 15 s starts a new handshake every 5 s. So a channel that has sent for
// `unanswered_after` (20 s) without receiving a byte is dead — the provider is gone, or a
// censor drops WireGuard — while a channel that sends nothing tells nothing (idle).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::core {

struct WireGuardPeerReading {
  std::string public_key;              // hex (UAPI) or base64 (wg show dump)
  std::int64_t last_handshake_s = 0;   // Unix time of the latest handshake; 0: never
  std::uint64_t rx_bytes = 0;
  std::uint64_t tx_bytes = 0;
};

struct WireGuardReading {
  std::vector<WireGuardPeerReading> peers;
};

// wireguard-go's (and the kernel's) cross-platform UAPI answer to `get=1`: key=value lines,
// a peer starting at each public_key, ending with errno=N. Errors: a line without '=', a
// number that is not one (the line quoted), a non-zero errno, no errno line (truncated).
common::Result<WireGuardReading, common::Failure> parse_uapi_get(std::string_view text);

// `wg show IF dump`: the interface's line (4 tab-separated fields), then one line per peer
// (8 fields: key, preshared key, endpoint, allowed IPs, latest handshake, rx, tx,
// keepalive). Errors: a line with another field count, a number that is not one.
common::Result<WireGuardReading, common::Failure> parse_wg_dump(std::string_view text);

enum class ChannelHealth : std::uint8_t {
  unknown,     // no reading (not a WireGuard device, or it does not answer)
  down,        // the device is down or gone
  working,     // bytes come back, or a handshake completed within handshake_fresh
  idle,        // nothing sent, no recent handshake: nothing to judge by
  unanswered,  // sending for unanswered_after with nothing received: dead
};
std::string_view to_string(ChannelHealth health);

struct ChannelHealthOptions {
  // Sending this long with nothing received makes the channel unanswered.
  common::Duration unanswered_after = std::chrono::seconds(20);
  // A handshake this recent counts as working (WireGuard's REJECT_AFTER_TIME).
  std::int64_t handshake_fresh_s = 180;
};

class ChannelHealthJudge {
 public:
  explicit ChannelHealthJudge(ChannelHealthOptions options = {}) : options_(options) {}

  // One reading: `now` monotonic, `unix_now_s` the wall clock (handshake times are wall
  // clock), `device_up` the channel device's state, `reading` nullopt when it failed.
  // Returns the state after it.
  ChannelHealth update(common::Timestamp now, std::int64_t unix_now_s, bool device_up,
                       const std::optional<WireGuardReading>& reading);

  ChannelHealth state() const { return state_; }
  // Times the channel became unanswered.
  std::uint64_t unanswered_episodes() const { return unanswered_episodes_; }
  // Seconds since the latest handshake of any peer; nullopt: none yet (or no reading).
  std::optional<std::int64_t> handshake_age_s() const { return handshake_age_s_; }
  const std::optional<WireGuardReading>& last_reading() const { return last_; }

 private:
  ChannelHealthOptions options_;
  ChannelHealth state_ = ChannelHealth::unknown;
  std::optional<WireGuardReading> last_;
  std::uint64_t rx_ = 0, tx_ = 0;
  bool have_totals_ = false;
  std::optional<common::Timestamp> sending_since_;  // first send after the last receive
  std::optional<std::int64_t> handshake_age_s_;
  std::uint64_t unanswered_episodes_ = 0;
};

}  // namespace quicstep::client::core
