// Lift datagrams: credit for a server's anti-amplification limit on a moved flow's new path.
//
// When a flow moves native, the server sees a packet from a new address and starts to
// validate it (RFC 9000 §9.3); until the client's PATH_RESPONSE arrives, one round trip
// later, it may send there only three times the bytes it received there (§8.1). A moved
// flow's first native packets are the client's ACKs, some 50 bytes each, so for that round
// trip the server sends almost nothing: measured with gtlsserver's qlog
// (measurement/pageload/move_cost.py), 1 KB in the 77 ms of validation, against the 14.5 KB
// of its (reset) congestion window.
//
// §8.1 also says that a server MUST count "all of the payload bytes received in datagrams
// that are uniquely attributed to a single connection", including "datagrams that contain
// packets that are all discarded". So right after the flow's first native packet the
// daemon sends `lift_bytes` more from the flow's address and port, in datagrams of 1,200
// bytes that start like the client's own short header — its first byte and up to 20 bytes
// of its Destination Connection ID, so that the server attributes them to the connection —
// and go on with random bytes: the server counts them, fails to decrypt them and drops
// them. They carry nothing the censor could read (no name; a short header's shape), and
// leave as the flow's other native packets do (SO_MARK of the native flows).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/flow_key.hpp"
#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::kernel {

// The datagram size: QUIC's smallest maximum (every path carries it).
inline constexpr std::size_t kLiftDatagramSize = 1200;
// The bytes of the client's packet that are kept: the first byte and a Destination
// Connection ID of up to 20 bytes (RFC 9000 §17.3.1).
inline constexpr std::size_t kLiftHeaderBytes = 21;

// One lift datagram's UDP payload: the first kLiftHeaderBytes of `short_header` (the
// client's packet of this flow), then random bytes, `size` in all. Empty when
// `short_header` is not a QUIC short header (its first bit set, or shorter than 2 bytes).
std::vector<std::uint8_t> lift_payload(common::Bytes short_header, std::size_t size,
                                       std::mt19937_64& rng);

// Sends lift datagrams from a flow's client address and port: raw UDP sockets (IPv4 and
// IPv6, the source set per datagram), marked so that the routing rules take them native.
class LiftSender {
 public:
  // Opens both sockets (CAP_NET_RAW); `mark` is the native flows' mark.
  common::Outcome open(std::uint32_t mark);
  bool is_open() const { return v4_.valid() || v6_.valid(); }
  // `bytes` (rounded up to whole datagrams) for `flow`, starting like `short_header`;
  // returns the datagrams sent.
  std::size_t send(const common::FlowKey& flow, common::Bytes short_header, std::size_t bytes);

 private:
  net::UniqueFd v4_, v6_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace quicstep::client::kernel
