// plan_verdicts: how a burst of per-packet decisions becomes nfqueue verdict messages. Sans-IO
// (nfqueue_frontend.cpp sends what this returns), so the rule that invariant 1 rests on is
// unit-tested: a verdict that changes the mark (native) is always an individual message for
// its packet id; only "accept unchanged" runs (the pre-set channel mark) are batched, since a
// batch verdict also releases any earlier packet whose queue message was lost.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace quicstep::net {

struct PendingVerdict {
  std::uint32_t id = 0;
  std::optional<std::uint32_t> mark;  // nullopt: accept with the mark unchanged
};

struct VerdictMessage {
  std::uint32_t id = 0;               // batch: every id up to this one
  std::optional<std::uint32_t> mark;  // set only for individual messages
  bool batch = false;
  friend bool operator==(const VerdictMessage&, const VerdictMessage&) = default;
};

// Precondition: ids increase. Clears `out` and fills it, in the order to send. Unchanged
// verdicts with an id >= batch_below (the oldest packet still waiting for its verdict, see
// verdict_deferral.hpp) are individual messages too: a batch would release the waiting one.
void plan_verdicts(std::span<const PendingVerdict> pending, std::vector<VerdictMessage>* out,
                   std::optional<std::uint32_t> batch_below = std::nullopt);

}  // namespace quicstep::net
