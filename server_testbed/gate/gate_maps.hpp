// GateMaps: quicstep-gate's handle on the steering maps that quicstep-server --gate NAME
// hands out on /run/quicstep-gate-NAME/maps.sock (sockets, config, allow). The gate puts its
// own socket at QS_GATE_SLOT (the kernel removes it when the socket closes: that is the
// fail-open) and writes verified flows into the allowlist. RAII: closes the map fds.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "server_testbed/bpf/steering_shared.h"

namespace quicstep::server_testbed::gate {

class GateMaps {
 public:
  // Failures: the map socket's (which path, why: server not started with --gate NAME?).
  using Opened = common::Result<std::unique_ptr<GateMaps>, common::Failure>;
  static Opened open(const std::string& name);
  ~GateMaps();
  GateMaps(const GateMaps&) = delete;
  GateMaps& operator=(const GateMaps&) = delete;

  // The server's steering config (CID format, worker count, gate flag). false if unreadable.
  bool read_config(qs_steer_config* out) const;
  // sockets[QS_GATE_SLOT] = fd (a bound SO_REUSEPORT socket of the server's group). Failure:
  // the kernel's errno text.
  common::Outcome add_gate_socket(int fd);
  // allow[client flow] = expiry_ns (CLOCK_MONOTONIC). false if the kernel refused.
  bool allow(const sockaddr_storage& client, std::uint64_t expiry_ns);

 private:
  GateMaps() = default;
  int sockets_ = -1, config_ = -1, allow_ = -1;
};

// The allowlist key of a client address (tests build the same).
qs_allow_key allow_key(const sockaddr_storage& client);

}  // namespace quicstep::server_testbed::gate
