// Reads an interface channel's byte counters for core::ChannelHealth (channel_health.hpp), the way
// read_wireguard reads a WireGuard peer's: /sys/class/net/IF/statistics/{rx,tx}_bytes. On a
// tunnel device, tx is what the kernel handed the tunnel program (channel packets going
// out) and rx what the program gave back (answers), so the judge's rule — sending for
// unanswered_after with nothing received is dead — means the same for any tunnel that
// carries handshakes: a DNS query, a SYN or a QUIC Initial is always answered. There is no
// handshake time: the reading's one entry has last_handshake_s 0 and public_key "".
#pragma once

#include <string>

#include "client/core/channel_health.hpp"
#include "common/error.hpp"

namespace quicstep::client::daemon {

// `sys_root` is "/sys" but for tests. Errors: a counter that cannot be read or is not a
// number (the device is gone), quoted.
common::Result<core::WireGuardReading, common::Failure> read_device_counters(
    const std::string& interface, const std::string& sys_root = "/sys");

// A tproxy channel's counters the same way, from the nft table `table` (nft_rules.hpp, "A
// tproxy channel"): tx the bytes handed to the proxy client (channel_out), rx its answers
// (channel_in). The judge's rule holds for it as for a tunnel: the proxy answers a DNS
// query, a SYN or an Initial once its server does. Errors: the table or a counter missing.
common::Result<core::WireGuardReading, common::Failure> read_proxy_counters(const std::string& table);

}  // namespace quicstep::client::daemon
