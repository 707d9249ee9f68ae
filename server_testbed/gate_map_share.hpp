// Handing the steering maps to quicstep-gate. bpffs pins do not work for programs started
// with `ip netns exec` (it remounts /sys), so the server passes the map fds instead: it
// listens on a unix stream socket (/run/quicstep-gate-NAME/maps.sock, directory mode 0700)
// and sends every client the fds of the sockarray, config and allowlist maps (SCM_RIGHTS).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/error.hpp"

namespace quicstep::server_testbed {

// The maps, in this order, in every message.
struct GateMapFds {
  int sockets = -1;
  int config = -1;
  int allow = -1;
};

class MapShare {
 public:
  // Listens on path (replacing a stale socket) and serves fds from a thread until destroyed.
  // Failures: the path too long for a unix socket, socket/bind/listen's errno text. The
  // fds stay owned by the caller.
  using Started = common::Result<std::unique_ptr<MapShare>, common::Failure>;
  static Started start(const std::string& path, GateMapFds fds);
  ~MapShare();
  MapShare(const MapShare&) = delete;
  MapShare& operator=(const MapShare&) = delete;

 private:
  MapShare(std::string path, int listen_fd, GateMapFds fds);
  void serve();
  std::string path_;
  int listen_fd_;
  GateMapFds fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Connects to path and receives the three fds (the caller owns them). Failures: the path,
// the connection's errno text, no fds received.
common::Outcome receive_gate_maps(const std::string& path, GateMapFds* out);

}  // namespace quicstep::server_testbed
