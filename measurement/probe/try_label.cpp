#include "measurement/probe/try_label.hpp"

#include <algorithm>

namespace quicstep::measurement::probe {

std::string_view to_string(Label label) {
  switch (label) {
    case Label::pass: return "pass";
    case Label::refused: return "refused";
    case Label::no_spare_cid: return "no_spare_cid";
    case Label::path_validation_failed: return "path_validation_failed";
    case Label::timeout_after_switch: return "timeout_after_switch";
    case Label::response_on_old_path: return "response_on_old_path";
    case Label::connection_closed: return "connection_closed";
    case Label::handshake_failed: return "handshake_failed";
    case Label::not_run: return "not_run";
  }
  return "not_run";
}

std::size_t TryTally::count(Label label) const {
  return static_cast<std::size_t>(std::count(labels_.begin(), labels_.end(), label));
}

bool TryTally::decided() const {
  if (has_untried_) return true;
  if (labels_.size() >= tries_) return true;
  return std::any_of(labels_.begin(), labels_.end(),
                     [&](Label l) { return count(l) * 2 > tries_; });
}

Label TryTally::label() const {
  if (has_untried_) return untried_;
  if (labels_.empty()) return Label::not_run;
  // Most frequent; on a tie the earliest seen non-pass label wins, so support is never
  // claimed without a majority.
  Label best = labels_.front();
  std::size_t best_count = 0;
  for (Label l : labels_) {
    const std::size_t n = count(l);
    if (n > best_count || (n == best_count && best == Label::pass && l != Label::pass)) {
      best = l;
      best_count = n;
    }
  }
  return best;
}

}  // namespace quicstep::measurement::probe
