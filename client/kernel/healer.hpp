// Healer: the daemon's self-healing (docs/DESIGN.md invariant 6), the I/O half around the
// Reconciler (client/core/reconciler.hpp, the decisions); quicstepd's and quicstep-tun's
// (client/tun/linux/tun_healing.hpp). The daemon registers each piece of kernel state
// it owns with a check (is it there?) and a restore (put it back with the installer that put
// it there first); check() runs when the kernel announces a change (StateWatch) and every
// 500 ms. A piece found missing is restored in the same turn; one another tool keeps
// removing backs off (no fight in a loop); one that cannot be restored stays failed, and the
// piece's fail_closed action (if any) keeps invariant 1 meanwhile. Everything is logged once
// per transition and counted (status_json, the metrics).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/core/reconciler.hpp"
#include "common/error.hpp"

namespace quicstep::client::kernel {

using common::Timestamp;
using core::Piece;
using core::PieceState;
using core::PieceStatus;
using core::Reconciler;
using core::ReconcilerOptions;

struct OwnedPiece {
  Piece piece;
  // Whether the piece is in the kernel; nullopt: cannot tell now (a read failed, or the
  // piece cannot exist now, e.g. routes through a channel device that is down): no action.
  std::function<std::optional<bool>()> present;
  // Puts it back. Failure: why not (logged, counted; retried with back-off).
  std::function<common::Outcome()> restore;
  // Optional: while the piece stays missing (backing off, or its restore failed), what keeps
  // the daemon failed closed; undone by resolved() once it is back.
  std::function<void()> fail_closed;
  std::function<void()> resolved;
};

class Healer {
 public:
  explicit Healer(ReconcilerOptions options = {}) : reconciler_(options) {}

  void add(OwnedPiece piece) { pieces_.push_back({std::move(piece), false}); }
  bool empty() const { return pieces_.empty(); }

  // Checks every piece; restores what is missing, as the reconciler decides.
  void check();
  // When a waiting piece may be restored (never(): none).
  Timestamp next_expiry() const { return reconciler_.next_expiry(); }
  bool healthy() const { return reconciler_.healthy(); }

  // {"healthy": bool, "checks": n, "pieces": {"nft_table": {"state", "removals", "restores",
  //  "failures", "contested", "returned", "last_recovery_ms", "max_recovery_ms"}, ...}}
  nlohmann::json status_json() const;

 private:
  struct Registered {
    OwnedPiece piece;
    bool closed = false;  // its fail_closed action is in force
  };
  void check_one(Registered& r);

  Reconciler reconciler_;
  std::vector<Registered> pieces_;
  std::uint64_t checks_ = 0;
};

}  // namespace quicstep::client::kernel
