#include "client/kernel/watched_ports.hpp"

namespace quicstep::client::kernel {

bool WatchedPorts::watch(const common::FlowKey& flow) {
  if (!flows_.insert(flow).second) return false;
  return ports_[flow.client_port]++ == 0;
}

bool WatchedPorts::unwatch(const common::FlowKey& flow) {
  if (flows_.erase(flow) == 0) return false;
  auto it = ports_.find(flow.client_port);
  if (--it->second != 0) return false;
  ports_.erase(it);
  return true;
}

std::vector<common::FlowKey> WatchedPorts::release_all() {
  std::vector<common::FlowKey> out;
  for (const auto& f : flows_) {
    if (auto it = ports_.find(f.client_port); it != ports_.end()) {
      out.push_back(f);
      ports_.erase(it);
    }
  }
  flows_.clear();
  return out;
}

void WatchedPorts::clear() {
  flows_.clear();
  ports_.clear();
}

}  // namespace quicstep::client::kernel
