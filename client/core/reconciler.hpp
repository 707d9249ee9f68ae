// Reconciler: the decision core of self-healing (docs/DESIGN.md invariant 6), sans-IO. The
// daemon owns pieces of kernel state — its nft table, its ip rules, the channel's routes, the
// native guard — that other tools may remove (`nft flush ruleset`, `ip rule flush`, a
// network manager, a device going down). The daemon checks each piece (when the kernel
// announces a change, and periodically) and tells the reconciler what it found; the
// reconciler says whether to restore it now, and remembers what happened for the status.
//
// What must hold:
//   - A piece found missing is restored at once (the caller restores it in the same turn), so
//     the daemon fails closed only for as long as it takes to put the piece back.
//   - One removal by another tool may take several turns: `ip rule flush` deletes rule by
//     rule, and deletes again what the daemon put back meanwhile. A removal within
//     `episode_gap` of the last restore belongs to the same *episode* and is restored at
//     once too, up to `episode_limit` removals (then the episode counts as a fight).
//   - Never a fight in a loop: a piece removed in `contest_threshold` episodes within
//     `contest_window` is *contested* (another tool keeps removing it); its next restore waits
//     first_backoff, doubled on each further episode while contested, capped at max_backoff.
//     The piece stays missing meanwhile (the daemon fails closed and says so).
//   - A failed restore is retried after retry_delay, doubled on each consecutive failure,
//     capped at max_backoff; the piece stays `failed` (fail closed, reported) until it is back.
//   - A piece that comes back by itself (another tool restored it) is ok again.
// No I/O, no clock: time is passed in. No allocation after construction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "common/timestamp.hpp"

namespace quicstep::client::core {

using common::Duration;
using common::Timestamp;

enum class Piece : std::uint8_t {
  nft_table,       // the nft table(s) of the native path (and the queue rules)
  ip_rules,        // policy routing: the channel's rules (and the routed path's flow rules)
  channel_routes,  // the routes through the channel device the daemon put there
  native_guard,    // the tc guard on every native device (routed path)
};
inline constexpr std::size_t kPieceCount = 4;
std::string_view to_string(Piece p);

enum class PieceState : std::uint8_t {
  ok,           // present (or not checked yet)
  restoring,    // found missing; the caller is restoring it now
  backing_off,  // missing and contested: restored at retry_at
  failed,       // the last restore failed: retried at retry_at
};
std::string_view to_string(PieceState s);

struct ReconcilerOptions {
  Duration episode_gap = std::chrono::milliseconds(200);  // removals this soon after a
                                                          // restore: the same episode
  int episode_limit = 64;     // removals of one episode restored at once, at most
  int contest_threshold = 3;  // episodes within contest_window that make a piece contested
  Duration contest_window = std::chrono::seconds(30);
  Duration first_backoff = std::chrono::seconds(1);
  Duration retry_delay = std::chrono::milliseconds(500);
  Duration max_backoff = std::chrono::seconds(60);
};

struct PieceStatus {
  PieceState state = PieceState::ok;
  std::uint64_t removals = 0;       // times found missing after being present
  std::uint64_t episodes = 0;       // removals more than episode_gap after the last restore
  std::uint64_t restores = 0;       // successful restores
  std::uint64_t failures = 0;       // failed restores
  std::uint64_t contested = 0;      // times a restore was deferred by the back-off
  std::uint64_t returned = 0;       // came back without the daemon (another tool)
  Duration last_recovery{0};        // missing (first seen) -> restored, the last time
  Duration max_recovery{0};
  Timestamp missing_since = Timestamp::never();  // when found missing (never: present)
  Timestamp retry_at = Timestamp::never();       // backing_off/failed: the next attempt
};

enum class Action : std::uint8_t {
  none,     // present, or waiting (back-off, retry delay)
  restore,  // restore it now, then call restored()
};

class Reconciler {
 public:
  explicit Reconciler(ReconcilerOptions options = {}) : options_(options) {}

  // A check found `piece` present or missing at `now`. Returns restore when the caller
  // should put it back now (then it calls restored()).
  Action observe(Piece piece, bool present, Timestamp now);
  // The outcome of the restore that observe() asked for.
  void restored(Piece piece, bool ok, Timestamp now);

  // The earliest retry_at of a piece that waits (never(): none): when to check again.
  Timestamp next_expiry() const;
  // Whether every piece is present (false: the daemon fails closed somewhere).
  bool healthy() const;
  const PieceStatus& status(Piece piece) const { return pieces_[index(piece)].status; }

 private:
  static constexpr std::size_t kHistory = 8;  // removal times kept per piece
  struct Entry {
    PieceStatus status;
    std::array<Timestamp, kHistory> removed_at{};  // ring of the last episodes' starts
    std::size_t removed_count = 0;                 // total pushed into the ring
    int consecutive_failures = 0;
    Timestamp last_restore = Timestamp{std::numeric_limits<std::int64_t>::min() / 2};
    int episode_removals = 0;  // removals in the current episode
  };
  static std::size_t index(Piece p) { return static_cast<std::size_t>(p); }
  // Removals of `e` within contest_window before `now`.
  int recent_removals(const Entry& e, Timestamp now) const;
  Duration capped(Duration base, int doublings) const;

  ReconcilerOptions options_;
  std::array<Entry, kPieceCount> pieces_{};
};

}  // namespace quicstep::client::core
