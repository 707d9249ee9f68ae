// AddressValidator: the one decision about a client Initial that gate and workers share —
// accept it (no token needed, or a valid universal token), answer with a Retry, or drop it —
// and the tokens they issue (Retry, NEW_TOKEN). Sans-IO: the caller passes the parsed header,
// the client address and the wall-clock time, and does the sending. One per thread.
#pragma once

#include <ngtcp2/ngtcp2.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "server_testbed/token/replay_guard.hpp"
#include "server_testbed/token/universal_token.hpp"

namespace quicstep::server_testbed {

// Token counters (relaxed atomics: written by one thread, read by the stats thread).
struct TokenCounters {
  using C = std::atomic<std::uint64_t>;
  C retry_sent{0};
  C token_valid{0};        // Retry or NEW_TOKEN token verified (first use or resend)
  C token_invalid{0};      // tag failed (forged, tampered, wrong address or CID), malformed
  C token_unknown_key{0};  // key id outside the current sequence and the grace period
  C token_expired{0};
  C token_replayed{0};     // a Retry token used again after the repeat window (ReplayGuard)
  C new_token_sent{0};
  C new_token_valid{0};    // of token_valid: NEW_TOKEN tokens (Retry skipped)
  nlohmann::json to_json() const;
  static void add(C& c) { c.fetch_add(1, std::memory_order_relaxed); }
};

class AddressValidator {
 public:
  enum class Action : std::uint8_t {
    accept,      // go ahead; *odcid is set when a Retry token was verified
    send_retry,  // answer with a Retry carrying make_retry_token()
    drop,        // invalid, expired or replayed Retry token (counted)
  };
  struct Outcome {
    Action action = Action::drop;
    bool has_odcid = false;
    ngtcp2_cid odcid{};
    bool new_token = false;  // accepted on a NEW_TOKEN token
  };

  // require_validation false: every Initial is accepted and tokens are ignored (no Retry).
  AddressValidator(token::TokenCodec codec, bool require_validation, TokenCounters& counters);

  Outcome on_initial(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from, std::uint64_t now_ms);

  // Writes a Retry token for a Retry to `to` with SCID rscid; returns its length (0 on error).
  std::size_t make_retry_token(std::span<std::uint8_t> out, const sockaddr_storage& to,
                               const ngtcp2_cid& odcid, const ngtcp2_cid& rscid,
                               std::uint64_t now_ms);
  std::size_t make_new_token(std::span<std::uint8_t> out, const sockaddr_storage& to,
                             std::uint64_t now_ms);

  bool require_validation() const { return require_validation_; }
  TokenCounters& counters() { return counters_; }

 private:
  token::TokenCodec codec_;
  bool require_validation_;
  TokenCounters& counters_;
  token::ReplayGuard replay_;
};

// Wall-clock milliseconds since the epoch. Tokens carry wall time, not the tree's monotonic
// common::Timestamp: a token minted by one process (the gate, a worker, an earlier run) is
// checked by another, and a monotonic clock means nothing outside its boot.
std::uint64_t wall_clock_ms();

}  // namespace quicstep::server_testbed
