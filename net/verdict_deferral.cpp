#include "net/verdict_deferral.hpp"

#include <algorithm>
#include <limits>

namespace quicstep::net {

VerdictDeferral::VerdictDeferral(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)) {
  entries_.reserve(capacity_);
}

bool VerdictDeferral::defer(std::uint32_t id, std::optional<std::uint32_t> mark,
                            common::Timestamp release) {
  if (entries_.size() == capacity_) return false;
  entries_.push_back({id, mark, release});
  return true;
}

void VerdictDeferral::release_due(common::Timestamp now, std::vector<PendingVerdict>* out) {
  auto kept = entries_.begin();
  for (auto& e : entries_) {
    if (e.release <= now) {
      out->push_back({e.id, e.mark});
    } else {
      *kept++ = e;
    }
  }
  entries_.erase(kept, entries_.end());
}

std::size_t VerdictDeferral::abandon() {
  const std::size_t n = entries_.size();
  entries_.clear();
  return n;
}

common::Timestamp VerdictDeferral::next_release() const {
  common::Timestamp t{std::numeric_limits<std::int64_t>::max()};
  for (const auto& e : entries_) t = std::min(t, e.release);
  return t;
}

std::optional<std::uint32_t> VerdictDeferral::oldest_id() const {
  if (entries_.empty()) return std::nullopt;
  return entries_.front().id;
}

}  // namespace quicstep::net
