// Reads the channel device's WireGuard state for core::ChannelHealth (channel_health.hpp):
// wireguard-go's UAPI socket (/var/run/wireguard/IF.sock, `get=1`), else `wg show IF dump`
// (the kernel's WireGuard). Control plane, once a second: the socket read is bounded by a
// 250 ms timeout, so a stuck wireguard-go cannot stall the daemon's loop for longer.
#pragma once

#include <string>

#include "client/core/channel_health.hpp"
#include "common/error.hpp"

namespace quicstep::client::daemon {

// Errors: the socket's (connect, send, receive, timeout) and `wg`'s, and the parsers'.
common::Result<core::WireGuardReading, common::Failure> read_wireguard(const std::string& interface);

// After the native source address changed: makes wireguard-go open its sockets again on the
// same port (UAPI `set=1` with its own `listen_port`, which also clears every peer's cached
// source address). Without it wireguard-go keeps sending from the source it last received
// on — an address that may be gone — and the channel stays silent. The kernel's WireGuard
// (no UAPI socket) needs nothing: it drops a stale source itself. Returns true when a rebind
// was asked for. Errors: the socket's, and wireguard-go's errno.
common::Result<bool, common::Failure> rebind_wireguard(const std::string& interface);

}  // namespace quicstep::client::daemon
