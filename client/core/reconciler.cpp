#include "client/core/reconciler.hpp"

#include <algorithm>

namespace quicstep::client::core {

std::string_view to_string(Piece p) {
  switch (p) {
    case Piece::nft_table: return "nft_table";
    case Piece::ip_rules: return "ip_rules";
    case Piece::channel_routes: return "channel_routes";
    case Piece::native_guard: return "native_guard";
  }
  return "?";
}

std::string_view to_string(PieceState s) {
  switch (s) {
    case PieceState::ok: return "ok";
    case PieceState::restoring: return "restoring";
    case PieceState::backing_off: return "backing_off";
    case PieceState::failed: return "failed";
  }
  return "?";
}

int Reconciler::recent_removals(const Entry& e, Timestamp now) const {
  const std::size_t n = std::min(e.removed_count, kHistory);
  int recent = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (now - e.removed_at[i] <= options_.contest_window) ++recent;
  }
  return recent;
}

Duration Reconciler::capped(Duration base, int doublings) const {
  Duration d = base;
  for (int i = 0; i < doublings && d < options_.max_backoff; ++i) d *= 2;
  return std::min(d, options_.max_backoff);
}

Action Reconciler::observe(Piece piece, bool present, Timestamp now) {
  Entry& e = pieces_[index(piece)];
  PieceStatus& s = e.status;
  if (present) {
    if (s.state != PieceState::ok) {
      ++s.returned;  // put back by someone else while the daemon waited
      s.state = PieceState::ok;
      s.missing_since = Timestamp::never();
      s.retry_at = Timestamp::never();
      e.consecutive_failures = 0;
    }
    return Action::none;
  }
  switch (s.state) {
    case PieceState::ok: {
      ++s.removals;
      s.missing_since = now;
      if (now - e.last_restore <= options_.episode_gap &&
          e.episode_removals < options_.episode_limit) {
        ++e.episode_removals;  // the same removal still going on: put it back again
        s.state = PieceState::restoring;
        return Action::restore;
      }
      ++s.episodes;
      e.episode_removals = 1;
      e.removed_at[e.removed_count % kHistory] = now;
      ++e.removed_count;
      const int recent = recent_removals(e, now);
      if (recent >= options_.contest_threshold) {
        ++s.contested;
        s.state = PieceState::backing_off;
        s.retry_at = now + capped(options_.first_backoff, recent - options_.contest_threshold);
        return Action::none;
      }
      s.state = PieceState::restoring;
      return Action::restore;
    }
    case PieceState::restoring:
      return Action::restore;  // the caller did not report the last attempt: try again
    case PieceState::backing_off:
    case PieceState::failed:
      if (now < s.retry_at) return Action::none;
      s.state = PieceState::restoring;
      return Action::restore;
  }
  return Action::none;
}

void Reconciler::restored(Piece piece, bool ok, Timestamp now) {
  Entry& e = pieces_[index(piece)];
  PieceStatus& s = e.status;
  if (ok) {
    ++s.restores;
    e.last_restore = now;
    if (s.missing_since != Timestamp::never()) {
      s.last_recovery = now - s.missing_since;
      s.max_recovery = std::max(s.max_recovery, s.last_recovery);
    }
    s.state = PieceState::ok;
    s.missing_since = Timestamp::never();
    s.retry_at = Timestamp::never();
    e.consecutive_failures = 0;
    return;
  }
  ++s.failures;
  s.state = PieceState::failed;
  s.retry_at = now + capped(options_.retry_delay, e.consecutive_failures);
  ++e.consecutive_failures;
}

Timestamp Reconciler::next_expiry() const {
  Timestamp next = Timestamp::never();
  for (const Entry& e : pieces_) {
    if (e.status.state == PieceState::backing_off || e.status.state == PieceState::failed) {
      next = std::min(next, e.status.retry_at);
    }
  }
  return next;
}

bool Reconciler::healthy() const {
  return std::all_of(pieces_.begin(), pieces_.end(),
                     [](const Entry& e) { return e.status.state == PieceState::ok; });
}

}  // namespace quicstep::client::core
