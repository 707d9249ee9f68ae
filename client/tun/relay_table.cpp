#include "client/tun/relay_table.hpp"

namespace quicstep::client::tun {

RelayTable::RelayTable(std::size_t capacity, Duration idle, std::uint64_t seed)
    : table_(capacity, core::FlowKeyFastHash{seed ^ 0x9e3779b97f4a7c15ull}),
      live_(capacity, false),
      idle_(idle) {}

bool RelayTable::live(RelayId id) const { return id < live_.size() && live_[id]; }

RelayId RelayTable::add(const FlowKey& flow, Timestamp now) {
  const RelayId id = table_.insert(flow);
  if (id == kNoRelay) return kNoRelay;
  Relay& r = table_.value(id);
  r.opened = now;
  r.last_used = now;
  live_[id] = true;
  return id;
}

void RelayTable::used(RelayId id, Timestamp now) {
  table_.value(id).last_used = now;
  table_.touch(id);
}

void RelayTable::remove(RelayId id) {
  live_[id] = false;
  table_.erase(id);
}

RelayId RelayTable::find_idle(Timestamp now) const {
  const RelayId id = table_.oldest();
  if (id == kNoRelay) return kNoRelay;
  return now - table_.value(id).last_used >= idle_ ? id : kNoRelay;
}

Timestamp RelayTable::next_idle_expiry() const {
  const RelayId id = table_.oldest();
  return id == kNoRelay ? Timestamp::never() : table_.value(id).last_used + idle_;
}

}  // namespace quicstep::client::tun
