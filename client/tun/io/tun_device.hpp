// The TUN device on Linux (quicstep-tun): created, or attached to when it exists, as
// IFF_TUN | IFF_NO_PI, so that each read and write is one IP packet. Made persistent: when
// the engine dies the device stays, with its addresses and the routes into it, so that the
// traffic that needs a decision meets a device nobody reads — blocked, never leaked onto
// the native route (docs/DESIGN.md "The TUN engine"). `quicstep-tun --cleanup` removes it.
// (On Android the TUN comes from VpnService, as a descriptor.)
#pragma once

#include <string>

#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::tun {

// Opens the TUN device `name` (at most 15 characters), persistent; with `vnet_header`,
// every read and write on the descriptor carries a virtio_net_hdr first (IFF_VNET_HDR).
// Errors: the name, and the system's reason ("open /dev/net/tun: No such file or
// directory", "TUNSETIFF qst0: Operation not permitted").
common::Result<net::UniqueFd, common::Failure> open_tun(const std::string& name,
                                                        bool vnet_header = false);

// Whether the kernel takes UDP GSO packets (VIRTIO_NET_HDR_GSO_UDP_L4) on this IFF_VNET_HDR
// descriptor: it does when it accepts the UDP segmentation offload flags (Linux 6.2+). The
// offloads are switched off again before returning, so that reads stay one complete packet
// each (the engine does not take GSO packets from applications).
bool tun_takes_udp_gso(int tun_fd);

// Turns persistence off on an open descriptor of the device (a TUN without IFF_MULTI_QUEUE
// takes one descriptor only, so the engine uses its own): the device goes when it closes.
// Errors: the system's reason.
common::Outcome stop_persisting(int tun_fd, const std::string& name);

// Turns persistence off and closes: the device goes when its last descriptor closes.
// Errors: as open_tun's.
common::Outcome remove_tun(const std::string& name);

}  // namespace quicstep::client::tun
