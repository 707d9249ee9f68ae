// WatchedPorts: the client ports of the flows the watchdog waits on (moved native, not yet
// confirmed, failed back or forgotten), as the kernel's `watchports` set must hold them.
// Every inbound native packet meets that set (a bitmap: one bit test) before the watch
// set's 4-tuple lookup (a hash), so an answer of a flow that is not watched costs one bit
// test. Two watched flows may share a port (an unconnected socket): the port stays while one
// of them is watched. The set has no timeouts: what the daemon adds, it deletes.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/flow_key.hpp"

namespace quicstep::client::kernel {

class WatchedPorts {
 public:
  // `flow` starts being watched. True when its port is new: add it to the kernel's set.
  bool watch(const common::FlowKey& flow);
  // `flow` stops being watched. True when no watched flow uses its port any longer: delete
  // it from the kernel's set. False for a flow not watched.
  bool unwatch(const common::FlowKey& flow);
  // The kernel's sets were replaced (they start empty): forget everything.
  void clear();
  // The flows' state is gone but the kernel's set stays: forgets everything and returns one
  // flow per port still held (delete them).
  std::vector<common::FlowKey> release_all();
  std::size_t flows() const { return flows_.size(); }
  std::size_t ports() const { return ports_.size(); }

 private:
  std::unordered_set<common::FlowKey, common::FlowKeyHash> flows_;
  std::unordered_map<std::uint16_t, std::uint32_t> ports_;  // port -> watched flows using it
};

}  // namespace quicstep::client::kernel
