// WireGuard's messages as an on-path censor tells them (the lab censor's --block-wireguard).
// WireGuard makes no attempt to hide (its whitepaper §5.4, and "Protocol & Cryptography" on
// wireguard.com): every message starts with a type byte and three zero bytes, and the
// handshake messages have fixed sizes — a 148-byte initiation (type 1), a 92-byte response
// (type 2), a 64-byte cookie reply (type 3); transport data (type 4) is 16 bytes of header
// and a 16-byte tag around a payload padded to 16 bytes. That is the fingerprint censors
// are reported to block on: Russia's TSPU has dropped WireGuard handshakes by it since
// 2023-2024, Iran's and Turkmenistan's filters block the protocol, and China's GFW blocks
// WireGuard endpoints after seeing them (net4people/bbs and GFW Report threads; the
// reports differ on whether the response or the transport packets are also matched).
// Sans-IO; reads only the UDP payload's length and first four bytes.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/byte_reader.hpp"

namespace quicstep::censor {

enum class WireGuardMessage : std::uint8_t {
  none,          // not a WireGuard message by its type, reserved bytes and size
  initiation,    // type 1, 148 bytes
  response,      // type 2, 92 bytes
  cookie_reply,  // type 3, 64 bytes
  transport,     // type 4, at least 32 bytes, a multiple of 16
};
std::string_view to_string(WireGuardMessage m);

// What the UDP payload `udp_payload` is, by WireGuard's fingerprint. Never fails.
WireGuardMessage classify_wireguard(common::Bytes udp_payload);

// A handshake message (initiation or response): what --block-wireguard blocks on.
inline bool is_wireguard_handshake(WireGuardMessage m) {
  return m == WireGuardMessage::initiation || m == WireGuardMessage::response;
}

}  // namespace quicstep::censor
