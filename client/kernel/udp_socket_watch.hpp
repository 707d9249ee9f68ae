// UdpSocketWatch: this namespace's UDP sockets, from the kernel's socket diagnostics
// (sock_diag over netlink, what `ss` reads): a subscription to their destruction
// (SKNLGRP_INET_UDP_DESTROY and its IPv6 twin; the kernel announces every UDP socket it
// frees while someone listens) and a lookup of the sockets on one local port.
//
// The routed native path (routed_path.hpp) keeps a rule per flow moved native. A rule that
// outlived its socket would send a new connection that reuses the port to the same server
// natively, where the guard drops its Initial: the rule goes when the socket goes. Control
// plane; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/flow_key.hpp"
#include "common/ip_packet.hpp"

struct mnl_socket;

namespace quicstep::client::kernel {

struct UdpSocketId {
  common::IpAddress local;   // v4-mapped IPv6 addresses as IPv4; all zero: unbound
  common::IpAddress remote;  // all zero: not connected
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;  // 0: not connected
};

// Whether packets of `flow` (outbound orientation: client = this host) could be this
// socket's: its local port, and its peer if it is connected.
bool socket_may_carry(const UdpSocketId& socket, const common::FlowKey& flow);

class UdpSocketWatch {
 public:
  UdpSocketWatch() = default;
  UdpSocketWatch(const UdpSocketWatch&) = delete;
  UdpSocketWatch& operator=(const UdpSocketWatch&) = delete;
  ~UdpSocketWatch();

  // Subscribes to destructions (needs CAP_NET_ADMIN) and opens the lookup socket. Failures:
  // the sockets', the subscription's.
  common::Outcome open();
  // Opens the lookup socket alone (sockets_on_port, may_carry; no subscription). Failure:
  // the socket's.
  common::Outcome open_lookup();
  bool is_open() const { return lookup_ != nullptr; }
  // The subscription's descriptor (non-blocking), readable when destructions are queued.
  int fd() const;
  // Reads the queued destructions, calling `on_closed` for each. Returns false when the
  // kernel dropped some (the receive buffer overflowed): the caller checks its ports again.
  bool drain(const std::function<void(const UdpSocketId&)>& on_closed);
  // The UDP sockets (IPv4 and IPv6) bound to local `port`; nullopt if the kernel could not be
  // asked. A dump of every UDP socket, filtered here: O(sockets) a call.
  std::optional<std::vector<UdpSocketId>> sockets_on_port(std::uint16_t port);
  // Whether a socket of this namespace would receive `flow`'s answers (outbound orientation:
  // client = this host), i.e. could carry the flow: one exact request (sock_diag's lookup of
  // the socket an incoming datagram from the server would reach: connected, bound, or
  // dual-stack), microseconds whatever the number of sockets. nullopt if the kernel could not
  // be asked.
  std::optional<bool> may_carry(const common::FlowKey& flow);

  std::uint64_t destructions_seen() const { return seen_; }
  std::uint64_t overflows() const { return overflows_; }

 private:
  mnl_socket* events_ = nullptr;
  mnl_socket* lookup_ = nullptr;
  std::uint32_t seq_ = 1;
  std::uint64_t seen_ = 0;
  std::uint64_t overflows_ = 0;
};

}  // namespace quicstep::client::kernel
