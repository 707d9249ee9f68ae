// FastPath: a kernel shortcut for moved flows, where the frontend has one (quicstep-tun on
// Linux: a tc program on the TUN, client/tun/linux/tun_fast_path.hpp; Android has none).
// Once a flow's server answers its relay socket and the classifier has confirmed the move,
// the application's QUIC short headers of that flow leave natively from the relay socket's
// address without crossing the engine; everything else of it (long headers) still comes to
// the engine. The engine installs and removes flows; the relay socket stays (what the
// server sends comes back through it).
#pragma once

#include <cstdint>

#include "common/flow_key.hpp"

namespace quicstep::client::tun {

struct FastPathCounters {
  std::uint64_t flows = 0;    // installed now
  std::uint64_t packets = 0;  // datagrams it sent, ever (removed flows' included)
  std::uint64_t bytes = 0;    // their IP octets
  std::uint64_t installed = 0;       // installs, ever
  std::uint64_t install_failed = 0;  // refused (no route, the map full): the engine relays
};

class FastPath {
 public:
  virtual ~FastPath() = default;
  // `flow` (as the application sends it into the TUN) leaves from `relay_fd`'s address.
  // False: not installed; the engine goes on relaying the flow.
  virtual bool install(const common::FlowKey& flow, int relay_fd) = 0;
  virtual void remove(const common::FlowKey& flow) = 0;
  virtual FastPathCounters counters() = 0;
};

}  // namespace quicstep::client::tun
