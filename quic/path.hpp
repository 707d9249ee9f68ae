// ngtcp2 paths and socket addresses. An ngtcp2_path points at addresses it does not own:
// make_path's arguments must outlive the call that takes the path (ngtcp2 copies them).
#pragma once

#include <ngtcp2/ngtcp2.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "net/socket_endpoint.hpp"

namespace quicstep::quic {

inline ngtcp2_path make_path(sockaddr_storage& local, sockaddr_storage& remote) {
  return {{reinterpret_cast<sockaddr*>(&local), net::sockaddr_len(local)},
          {reinterpret_cast<sockaddr*>(&remote), net::sockaddr_len(remote)},
          nullptr};
}

// A copy of the address ngtcp2 holds.
inline sockaddr_storage to_sockaddr(const ngtcp2_addr& addr) {
  sockaddr_storage out{};
  std::memcpy(&out, addr.addr, std::min<std::size_t>(addr.addrlen, sizeof(out)));
  return out;
}

}  // namespace quicstep::quic
