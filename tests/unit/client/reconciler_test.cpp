// Reconciler: a removed piece is restored at once; a piece another tool keeps removing backs
// off exponentially (no fight in a loop) and stays reported; failed restores are retried
// with back-off; a piece put back by someone else is ok again; recovery times.
#include "client/core/reconciler.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace quicstep::client::core {
namespace {

using namespace std::chrono_literals;

Timestamp at(Duration d) { return Timestamp{0} + d; }

TEST(Reconciler, PresentPieceNeedsNothing) {
  Reconciler r;
  EXPECT_EQ(r.observe(Piece::nft_table, true, at(0s)), Action::none);
  EXPECT_TRUE(r.healthy());
  EXPECT_EQ(r.status(Piece::nft_table).removals, 0u);
  EXPECT_EQ(r.next_expiry(), Timestamp::never());
}

TEST(Reconciler, RemovedPieceIsRestoredAtOnceAndTimed) {
  Reconciler r;
  EXPECT_EQ(r.observe(Piece::ip_rules, false, at(10s)), Action::restore);
  EXPECT_FALSE(r.healthy());
  EXPECT_EQ(r.status(Piece::ip_rules).state, PieceState::restoring);
  r.restored(Piece::ip_rules, true, at(10s + 40ms));
  const PieceStatus& s = r.status(Piece::ip_rules);
  EXPECT_EQ(s.state, PieceState::ok);
  EXPECT_EQ(s.removals, 1u);
  EXPECT_EQ(s.restores, 1u);
  EXPECT_EQ(s.last_recovery, 40ms);
  EXPECT_EQ(s.max_recovery, 40ms);
  EXPECT_TRUE(r.healthy());
  // Other pieces are independent.
  EXPECT_EQ(r.status(Piece::nft_table).removals, 0u);
}

TEST(Reconciler, UnreportedAttemptIsAskedAgain) {
  Reconciler r;
  EXPECT_EQ(r.observe(Piece::nft_table, false, at(0s)), Action::restore);
  EXPECT_EQ(r.observe(Piece::nft_table, false, at(500ms)), Action::restore);
  EXPECT_EQ(r.status(Piece::nft_table).removals, 1u);  // still the same removal
}

TEST(Reconciler, ContestedPieceBacksOffExponentiallyAndIsCapped) {
  ReconcilerOptions o;
  o.contest_threshold = 3;
  o.contest_window = 30s;
  o.first_backoff = 1s;
  o.max_backoff = 8s;
  Reconciler r(o);
  Timestamp now = at(0s);
  // Two removals within the window: restored at once each time.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(r.observe(Piece::nft_table, false, now), Action::restore) << i;
    r.restored(Piece::nft_table, true, now + 10ms);
    now = now + 1s;
  }
  // The third: contested, the restore waits first_backoff.
  EXPECT_EQ(r.observe(Piece::nft_table, false, now), Action::none);
  EXPECT_EQ(r.status(Piece::nft_table).state, PieceState::backing_off);
  EXPECT_EQ(r.status(Piece::nft_table).contested, 1u);
  EXPECT_EQ(r.next_expiry(), now + 1s);
  EXPECT_EQ(r.observe(Piece::nft_table, false, now + 999ms), Action::none);
  EXPECT_EQ(r.observe(Piece::nft_table, false, now + 1s), Action::restore);
  r.restored(Piece::nft_table, true, now + 1s);
  // Each further removal doubles the wait: 2 s, 4 s, then the cap (8 s).
  Duration expected[] = {2s, 4s, 8s, 8s};
  for (Duration wait : expected) {
    now = now + 2s;
    ASSERT_EQ(r.observe(Piece::nft_table, false, now), Action::none);
    EXPECT_EQ(r.status(Piece::nft_table).retry_at, now + wait);
    EXPECT_EQ(r.observe(Piece::nft_table, false, now + (wait - 1ms)), Action::none);
    EXPECT_EQ(r.observe(Piece::nft_table, false, now + wait), Action::restore);
    r.restored(Piece::nft_table, true, now + wait);
    now = now + wait;
  }
  // The recovery time counts the back-off: the piece was missing all along.
  EXPECT_EQ(r.status(Piece::nft_table).last_recovery, 8s);
}

// `ip rule flush` deletes rule by rule and deletes again what was put back meanwhile: one
// episode, restored at once each time, not a fight; but an episode that never ends is.
TEST(Reconciler, RemovalsRightAfterARestoreAreOneEpisode) {
  ReconcilerOptions o;
  o.episode_gap = 200ms;
  o.episode_limit = 5;
  o.contest_threshold = 3;
  Reconciler r(o);
  Timestamp now = at(0s);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(r.observe(Piece::ip_rules, false, now), Action::restore) << i;
    r.restored(Piece::ip_rules, true, now + 1ms);
    now = now + 2ms;
  }
  EXPECT_EQ(r.status(Piece::ip_rules).removals, 5u);
  EXPECT_EQ(r.status(Piece::ip_rules).episodes, 1u);
  EXPECT_EQ(r.status(Piece::ip_rules).contested, 0u);
  // The sixth removal within the gap is past the episode's limit: a new episode.
  ASSERT_EQ(r.observe(Piece::ip_rules, false, now), Action::restore);
  r.restored(Piece::ip_rules, true, now + 1ms);
  EXPECT_EQ(r.status(Piece::ip_rules).episodes, 2u);
  // A third episode later (past the gap) within the window: contested.
  now = now + 1s;
  EXPECT_EQ(r.observe(Piece::ip_rules, false, now), Action::none);
  EXPECT_EQ(r.status(Piece::ip_rules).state, PieceState::backing_off);
  EXPECT_EQ(r.status(Piece::ip_rules).episodes, 3u);
}

TEST(Reconciler, RemovalsOutsideTheWindowDoNotContest) {
  ReconcilerOptions o;
  o.contest_threshold = 3;
  o.contest_window = 10s;
  Reconciler r(o);
  for (int i = 0; i < 20; ++i) {
    const Timestamp now = at(std::chrono::seconds(6 * i));  // at most 2 within any 10 s
    ASSERT_EQ(r.observe(Piece::ip_rules, false, now), Action::restore) << i;
    r.restored(Piece::ip_rules, true, now + 5ms);
  }
  EXPECT_EQ(r.status(Piece::ip_rules).contested, 0u);
  EXPECT_EQ(r.status(Piece::ip_rules).removals, 20u);
}

TEST(Reconciler, FailedRestoreIsRetriedWithBackoffAndStaysReported) {
  ReconcilerOptions o;
  o.retry_delay = 500ms;
  o.max_backoff = 2s;
  Reconciler r(o);
  ASSERT_EQ(r.observe(Piece::native_guard, false, at(0s)), Action::restore);
  r.restored(Piece::native_guard, false, at(0s));
  EXPECT_EQ(r.status(Piece::native_guard).state, PieceState::failed);
  EXPECT_FALSE(r.healthy());
  EXPECT_EQ(r.next_expiry(), at(500ms));
  EXPECT_EQ(r.observe(Piece::native_guard, false, at(400ms)), Action::none);
  ASSERT_EQ(r.observe(Piece::native_guard, false, at(500ms)), Action::restore);
  r.restored(Piece::native_guard, false, at(500ms));
  EXPECT_EQ(r.status(Piece::native_guard).retry_at, at(1500ms));  // doubled
  ASSERT_EQ(r.observe(Piece::native_guard, false, at(1500ms)), Action::restore);
  r.restored(Piece::native_guard, false, at(1500ms));
  EXPECT_EQ(r.status(Piece::native_guard).retry_at, at(3500ms));  // capped at 2 s
  EXPECT_EQ(r.status(Piece::native_guard).failures, 3u);
  EXPECT_EQ(r.status(Piece::native_guard).removals, 1u);
  ASSERT_EQ(r.observe(Piece::native_guard, false, at(3500ms)), Action::restore);
  r.restored(Piece::native_guard, true, at(3600ms));
  EXPECT_TRUE(r.healthy());
  EXPECT_EQ(r.status(Piece::native_guard).last_recovery, 3600ms);
  // The failures are forgotten once it is back: the next failure waits retry_delay again.
  ASSERT_EQ(r.observe(Piece::native_guard, false, at(100s)), Action::restore);
  r.restored(Piece::native_guard, false, at(100s));
  EXPECT_EQ(r.status(Piece::native_guard).retry_at, at(100s + 500ms));
}

TEST(Reconciler, PieceRestoredBySomeoneElseIsOkAgain) {
  ReconcilerOptions o;
  o.contest_threshold = 1;  // the first removal backs off
  Reconciler r(o);
  EXPECT_EQ(r.observe(Piece::channel_routes, false, at(0s)), Action::none);
  EXPECT_EQ(r.status(Piece::channel_routes).state, PieceState::backing_off);
  EXPECT_EQ(r.observe(Piece::channel_routes, true, at(200ms)), Action::none);
  EXPECT_EQ(r.status(Piece::channel_routes).state, PieceState::ok);
  EXPECT_EQ(r.status(Piece::channel_routes).returned, 1u);
  EXPECT_EQ(r.status(Piece::channel_routes).restores, 0u);
  EXPECT_TRUE(r.healthy());
  EXPECT_EQ(r.next_expiry(), Timestamp::never());
}

TEST(Reconciler, Names) {
  EXPECT_EQ(to_string(Piece::nft_table), "nft_table");
  EXPECT_EQ(to_string(Piece::ip_rules), "ip_rules");
  EXPECT_EQ(to_string(Piece::channel_routes), "channel_routes");
  EXPECT_EQ(to_string(Piece::native_guard), "native_guard");
  EXPECT_EQ(to_string(PieceState::backing_off), "backing_off");
}

}  // namespace
}  // namespace quicstep::client::core
