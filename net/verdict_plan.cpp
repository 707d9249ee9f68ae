#include "net/verdict_plan.hpp"

namespace quicstep::net {

void plan_verdicts(std::span<const PendingVerdict> pending, std::vector<VerdictMessage>* out,
                   std::optional<std::uint32_t> batch_below) {
  out->clear();
  std::optional<std::uint32_t> run_end;  // last id of a run of unchanged verdicts
  for (const auto& p : pending) {
    if (!p.mark && !(batch_below && p.id >= *batch_below)) {
      run_end = p.id;
      continue;
    }
    if (run_end) out->push_back({*run_end, std::nullopt, true}), run_end.reset();
    out->push_back({p.id, p.mark, false});
  }
  if (run_end) out->push_back({*run_end, std::nullopt, true});
}

}  // namespace quicstep::net
