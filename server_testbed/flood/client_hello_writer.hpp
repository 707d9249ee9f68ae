// A TLS 1.3 ClientHello for a QUIC v1 client (RFC 8446 §4.1.2, RFC 9001 §8.2), written for
// quicstep-flood: one X25519 key share, TLS_AES_128_GCM_SHA256 and friends, ALPN h3, SNI,
// and QUIC transport parameters naming the packet's SCID. A server that receives it does the
// full handshake work (key exchange, certificate signature): that is the flood's point.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/byte_reader.hpp"

namespace quicstep::server_testbed::flood {

struct ClientHelloSpec {
  std::string server_name = "localhost";  // a plausible DNS name; empty: no SNI extension
  common::Bytes initial_scid;             // initial_source_connection_id transport parameter
};

// The handshake message (type 1, u24 length, body): random, key share bytes from rng.
// Precondition: initial_scid is at most 20 bytes.
std::vector<std::uint8_t> write_client_hello(const ClientHelloSpec& spec, std::mt19937_64& rng);

}  // namespace quicstep::server_testbed::flood
