// PreferredAddresses: learns which servers move their clients to a preferred address
// (RFC 9000 §9.6), so that the classifier keeps those servers' handshake flows on the
// channel until the client has moved.
//
// Why: a server may offer a second address in its transport parameters; a client that takes
// it sends, once the handshake is confirmed, the connection's packets to that address from
// the same socket. A flow QUICstep moved native just before is then migrated twice at
// once (the provider's exit to the native address, then the new server address), and
// Debian's gtlsserver (ngtcp2 0.12.1; server-side preferred-address migration was fixed in
// ngtcp2 1.11) closes the connection with CONNECTION_ID_LIMIT_ERROR after ~50 KB (lab test
// quicstepd test_22). With the handshake flow held on the channel until the client moves,
// the server sees one change (both addresses at once), which it follows; the flow to the
// preferred address then goes native and carries the transfer at native speed.
//
// What is seen from outside (the transport parameters are encrypted): a flow whose first
// packet is a QUIC short header (no handshake: it continues a connection), from a client
// address and port that began a handshake with another address of the same family and
// server port shortly before. That handshake's destination is learnt. Only clients that
// move from the socket of the handshake are recognised (Debian's ngtcp2 client does); one
// that opens a new socket for the preferred address is not. The first connection to such a
// server is moved as any other (the server is not known yet).
//
// Bounded (invariant 4), no allocation after construction.
#pragma once

#include <cstddef>
#include <optional>

#include "client/core/destination_cache.hpp"
#include "client/core/flow_table.hpp"
#include "common/lru_table.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::core {

class PreferredAddresses {
 public:
  // How long after a handshake began a short-header-first flow from its socket counts as
  // the client moving to the server's preferred address: the client moves once its
  // handshake is confirmed, one or two round trips after it began.
  static constexpr Duration kWindow = std::chrono::seconds(10);

  // The classifier sizes it as the non-migrating cache, up to this: two tables of 64-byte
  // slots, which a cache configured to millions of entries must not multiply.
  static constexpr std::size_t kMaxCapacity = 4096;

  // capacity: handshakes remembered (by client address and port) and destinations learnt,
  // each; a learnt destination is kept for `ttl`. Allocates all memory.
  PreferredAddresses(std::size_t capacity, Duration ttl, std::uint64_t seed = 0);

  // `flow` sent its first long header at `now`.
  void handshake_began(const FlowKey& flow, Timestamp now);

  // `flow`'s first outbound packet is a short header. If its client address and port began
  // a handshake with another address (same family, same server port) within kWindow, the
  // server of that handshake offers a preferred address: it is learnt, and the flow of that
  // handshake is returned (the connection the client just moved).
  std::optional<FlowKey> client_moved(const FlowKey& flow, Timestamp now);

  // Whether `flow`'s destination (server address and port) is known to offer one.
  bool offers_preferred_address(const FlowKey& flow, Timestamp now) {
    return learnt_.contains(flow.server, flow.server_port, now);
  }

  std::size_t destinations() const { return learnt_.size(); }

 private:
  // The key is the flow's with its server address cleared: client address, both ports.
  struct Began {
    IpAddress server;
    Timestamp at;
  };
  static FlowKey endpoint(const FlowKey& flow);

  common::LruTable<FlowKey, Began, FlowKeyFastHash, FlowKeyFastEq> handshakes_;
  DestinationCache learnt_;
};

}  // namespace quicstep::client::core
