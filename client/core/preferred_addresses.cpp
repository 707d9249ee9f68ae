#include "client/core/preferred_addresses.hpp"

#include <algorithm>

namespace quicstep::client::core {

PreferredAddresses::PreferredAddresses(std::size_t capacity, Duration ttl, std::uint64_t seed)
    : handshakes_(std::max<std::size_t>(capacity, 1), FlowKeyFastHash{seed ^ 0x7f4a7c15ull}),
      learnt_(std::max<std::size_t>(capacity, 1), ttl, seed + 2) {}

FlowKey PreferredAddresses::endpoint(const FlowKey& flow) {
  FlowKey k = flow;
  k.server = IpAddress{};
  return k;
}

void PreferredAddresses::handshake_began(const FlowKey& flow, Timestamp now) {
  const FlowKey k = endpoint(flow);
  auto h = handshakes_.find(k);
  if (h == handshakes_.npos) {
    if (handshakes_.full()) handshakes_.erase(handshakes_.oldest());
    h = handshakes_.insert(k);
  } else {
    handshakes_.touch(h);
  }
  handshakes_.value(h) = Began{flow.server, now};
}

std::optional<FlowKey> PreferredAddresses::client_moved(const FlowKey& flow, Timestamp now) {
  const auto h = handshakes_.find(endpoint(flow));
  if (h == handshakes_.npos) return std::nullopt;
  const Began b = handshakes_.value(h);
  if (b.server == flow.server || b.server.family != flow.server.family ||
      now - b.at > kWindow || now < b.at) {
    return std::nullopt;
  }
  learnt_.add({b.server, flow.server_port}, NonMigratingReason::preferred_address, now);
  FlowKey moved = flow;
  moved.server = b.server;
  return moved;
}

}  // namespace quicstep::client::core
