#include "client/flow_table.hpp"

#include <cstring>
#include <limits>

namespace quicstep::client {
namespace {

std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t word) {
  h = (h ^ word) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

}  // namespace

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

std::uint64_t FlowKeyFastHash::operator()(const FlowKey& k) const noexcept {
  std::uint64_t h = seed;
  h = mix(h, load64(k.client.bytes.data()));
  h = mix(h, load64(k.client.bytes.data() + 8));
  h = mix(h, load64(k.server.bytes.data()));
  h = mix(h, load64(k.server.bytes.data() + 8));
  const std::uint64_t rest = std::uint64_t{k.client_port} << 32 |
                             std::uint64_t{k.server_port} << 16 |
                             std::uint64_t{k.protocol} << 8 |
                             static_cast<std::uint64_t>(k.client.family);
  h = mix(h, rest);
  return h * 0x94d049bb133111ebull;
}

FlowTable::FlowTable(std::size_t capacity, Duration idle_timeout, std::uint64_t seed)
    : table_(capacity, FlowKeyFastHash{seed ^ 0x9e3779b97f4a7c15ull}),
      idle_timeout_(idle_timeout) {}

void FlowTable::touch(Handle h, Timestamp now) {
  FlowEntry& e = table_.value(h);
  e.last_seen = now;
  if (now - e.linked >= kTouchGranularity) {
    e.linked = now;
    table_.touch(h);
  }
}

FlowTable::Handle FlowTable::insert(const FlowKey& key, Timestamp now, FlowKey* evicted_key,
                                    FlowEntry* evicted, bool* did_evict) {
  *did_evict = false;
  if (table_.full()) {
    const Handle old = table_.oldest();
    *evicted_key = table_.key(old);
    *evicted = table_.value(old);
    *did_evict = true;
    table_.erase(old);
  }
  const Handle h = table_.insert(key);
  FlowEntry& e = table_.value(h);
  e.first_seen = e.last_seen = e.linked = now;
  return h;
}

Timestamp FlowTable::next_idle_expiry() const {
  const Handle h = table_.oldest();
  if (h == npos) return Timestamp{std::numeric_limits<std::int64_t>::max()};
  return table_.value(h).linked + idle_timeout_;
}

bool FlowTable::pop_idle(Timestamp now, FlowKey* key, FlowEntry* entry) {
  for (;;) {
    const Handle h = table_.oldest();
    if (h == npos) return false;
    FlowEntry& e = table_.value(h);
    if (e.linked + idle_timeout_ > now) return false;
    if (e.last_seen + idle_timeout_ > now) {
      // Seen within the granularity of its relink: relink at its real time and go on.
      e.linked = e.last_seen;
      table_.touch(h);
      continue;
    }
    *key = table_.key(h);
    *entry = e;
    table_.erase(h);
    return true;
  }
}

}  // namespace quicstep::client
