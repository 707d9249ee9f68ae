// The packets of quicstep-flood, built without I/O: the UDP payload of each QUIC variant,
// and the IPv4/IPv6 + UDP (or TCP SYN) framing that a raw socket with a written IP header
// sends. Randomness comes from the caller's generator (the flood needs speed and variety,
// not secrecy).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::server_testbed::flood {

enum class FloodVariant : std::uint8_t {
  initial,  // a well-formed, encrypted v1 Initial with a ClientHello, no token
  garbage,  // an Initial header with a valid layout, random bytes where the ciphertext goes
  replay,   // a well-formed Initial carrying a token captured from a real Retry
  forged,   // a well-formed Initial carrying random token bytes
  syn,      // a TCP SYN (the TCP path's flood)
};

// "initial", "garbage", "replay", "forged", "syn". Errors: bad_value (any other text).
common::Result<FloodVariant> parse_variant(std::string_view text);
std::string_view to_string(FloodVariant variant);

struct QuicFloodSpec {
  FloodVariant variant = FloodVariant::initial;  // not syn
  std::vector<std::uint8_t> token;               // replay: the captured token
  std::size_t forged_token_length = 64;          // forged: bytes of random token (1..512)
  std::size_t datagram_size = 1200;              // UDP payload bytes (RFC 9000 §14.1: >= 1200)
  std::size_t min_dcid_length = 8;               // random DCID length in [min, max] (RFC 9000
  std::size_t max_dcid_length = 20;              // §7.2: a client's first DCID is >= 8)
  std::string server_name = "localhost";
};

// Checks a spec before a flood: CID bounds 1..20 (min <= max; 8 for a v1 server to accept),
// a non-empty token for replay, forged_token_length 1..512, datagram_size 1200..1472.
// The failure says which field is out of range.
common::Outcome check_spec(const QuicFloodSpec& spec);

// The UDP payload of one flood datagram: a fresh random DCID (and SCID) each call; padded to
// spec.datagram_size when the ClientHello and token leave room (a longer token makes a
// longer datagram). Precondition: check_spec(spec) succeeded and variant is not syn.
// Errors: those of common::protect_initial (none for a checked spec).
common::Result<std::vector<std::uint8_t>> build_quic_payload(const QuicFloodSpec& spec,
                                                             std::mt19937_64& rng);

struct Endpoints {
  common::IpAddress src;
  common::IpAddress dst;  // same family as src
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
};

// An IPv4 (no options, DF set, checksum filled) or IPv6 packet carrying UDP with its
// checksum. Precondition: src and dst of one family; payload fits in 65,507 bytes.
std::vector<std::uint8_t> frame_udp(const Endpoints& ends, common::Bytes payload);

// An IPv4 or IPv6 packet carrying a TCP SYN (MSS 1460, SACK permitted, window scale 7)
// with sequence number `seq` and a valid checksum.
std::vector<std::uint8_t> frame_tcp_syn(const Endpoints& ends, std::uint32_t seq);

}  // namespace quicstep::server_testbed::flood
