// Reads the channel device's WireGuard state for ChannelHealth (channel_health.hpp):
// wireguard-go's UAPI socket (/var/run/wireguard/IF.sock, `get=1`), else `wg show IF dump`
// (the kernel's WireGuard). Control plane, once a second: the socket read is bounded by a
// 250 ms timeout, so a stuck wireguard-go cannot stall the daemon's loop for longer.
#pragma once

#include <string>

#include "client/daemon/channel_health.hpp"
#include "common/error.hpp"

namespace quicstep::client::daemon {

// Errors: the socket's (connect, send, receive, timeout) and `wg`'s, and the parsers'.
common::Result<WireGuardReading, common::Failure> read_wireguard(const std::string& interface);

}  // namespace quicstep::client::daemon
