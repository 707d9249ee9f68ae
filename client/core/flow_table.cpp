#include "client/core/flow_table.hpp"

#include <limits>

namespace quicstep::client::core {
std::string_view to_string(FlowState state) {
  switch (state) {
    case FlowState::handshake: return "handshake";
    case FlowState::held: return "held";
    case FlowState::native_pending: return "native_pending";
    case FlowState::native_confirmed: return "native_confirmed";
    case FlowState::pinned_channel: return "pinned_channel";
    case FlowState::failed: return "failed";
  }
  return "?";
}

FlowTable::FlowTable(std::size_t capacity, Duration idle_timeout, std::uint64_t seed)
    : table_(capacity, FlowKeyFastHash{seed ^ 0x9e3779b97f4a7c15ull}),
      idle_timeout_(idle_timeout) {}

FlowTable::Handle FlowTable::insert(const FlowKey& key, Timestamp now) {
  const Handle h = table_.insert(key);
  if (h == npos) return npos;
  FlowEntry& e = table_.value(h);
  e.first_seen = e.last_seen = e.linked = now;
  return h;
}

Timestamp FlowTable::next_idle_expiry() const {
  const Handle h = table_.oldest();
  if (h == npos) return Timestamp{std::numeric_limits<std::int64_t>::max()};
  return table_.value(h).linked + idle_timeout_;
}

FlowTable::Handle FlowTable::find_idle(Timestamp now) {
  for (;;) {
    const Handle h = table_.oldest();
    if (h == npos) return npos;
    FlowEntry& e = table_.value(h);
    if (e.linked + idle_timeout_ > now) return npos;
    if (e.last_seen + idle_timeout_ <= now) return h;
    // Seen within the granularity of its last relink: relink at its real time, go on.
    e.linked = e.last_seen;
    table_.touch(h);
  }
}

}  // namespace quicstep::client::core
