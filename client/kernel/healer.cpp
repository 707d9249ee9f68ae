#include "client/kernel/healer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "net/clock.hpp"

namespace quicstep::client::kernel {

using common::Duration;
using core::Action;
namespace {

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

void Healer::check() {
  ++checks_;
  for (auto& r : pieces_) check_one(r);
}

void Healer::check_one(Registered& r) {
  const Piece piece = r.piece.piece;
  const std::optional<bool> present = r.piece.present();
  if (!present) return;
  const PieceState before = reconciler_.status(piece).state;
  const Timestamp now = net::monotonic_now();
  const Action action = reconciler_.observe(piece, *present, now);
  const PieceStatus& s = reconciler_.status(piece);
  if (*present) {
    if (before != PieceState::ok) {
      spdlog::info("kernel state: {} is back (put back by another tool)", to_string(piece));
    }
  } else if (before == PieceState::ok) {
    spdlog::warn("kernel state: {} missing (removed by another tool, or with its device; "
                 "{} time(s)); {}",
                 to_string(piece), s.removals,
                 action == Action::restore ? "restoring it"
                                           : "it keeps being removed: backing off, failed closed "
                                             "until the next restore");
  }
  if (action == Action::restore) {
    common::Outcome done = r.piece.restore();
    const Timestamp after = net::monotonic_now();
    reconciler_.restored(piece, done.ok(), after);
    if (done) {
      spdlog::warn("kernel state: {} restored, {:.1f} ms after it was found missing",
                   to_string(piece), ms(s.last_recovery));
    } else {
      spdlog::error("kernel state: restoring {} failed: {}; failed closed, retrying in {:.0f} ms",
                    to_string(piece), done.error().message, ms(s.retry_at - after));
    }
  } else if (s.state == PieceState::backing_off && before != PieceState::backing_off) {
    spdlog::warn("kernel state: {} contested (removed {} times within the window): next restore "
                 "in {:.0f} ms; failed closed until then",
                 to_string(piece), s.removals, ms(s.retry_at - now));
  }
  const bool missing = s.state == PieceState::backing_off || s.state == PieceState::failed;
  if (missing && !r.closed && r.piece.fail_closed) {
    r.piece.fail_closed();
    r.closed = true;
  } else if (s.state == PieceState::ok && r.closed) {
    if (r.piece.resolved) r.piece.resolved();
    r.closed = false;
  }
}

nlohmann::json Healer::status_json() const {
  nlohmann::json pieces = nlohmann::json::object();
  for (const auto& r : pieces_) {
    const PieceStatus& s = reconciler_.status(r.piece.piece);
    pieces[std::string(to_string(r.piece.piece))] = {
        {"state", std::string(to_string(s.state))},
        {"removals", s.removals},
        {"episodes", s.episodes},
        {"restores", s.restores},
        {"failures", s.failures},
        {"contested", s.contested},
        {"returned", s.returned},
        {"failed_closed", r.closed},
        {"last_recovery_ms", ms(s.last_recovery)},
        {"max_recovery_ms", ms(s.max_recovery)}};
  }
  return {{"healthy", reconciler_.healthy()}, {"checks", checks_}, {"pieces", pieces}};
}

}  // namespace quicstep::client::kernel
