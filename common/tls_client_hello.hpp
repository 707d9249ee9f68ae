// The TLS ClientHello (RFC 8446 §4.1.2), parsed from handshake-layer bytes: the contiguous
// CRYPTO stream of a QUIC Initial, or the de-framed TLS records of a TCP connection.
//
// Only what a router or a censor decides on is extracted: SNI (RFC 6066), ALPN (RFC 7301),
// supported_versions, key_share groups, and the presence of ECH (draft-ietf-tls-esni,
// 0xfe0d) and QUIC transport parameters (RFC 9001 §8.2, 0x39). Extensions may come in any
// order (Chrome permutes them). Views point into the caller's bytes; the host name is
// copied, lower-cased, into the struct. No allocation, no exceptions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/byte_reader.hpp"
#include "common/error.hpp"
#include "common/fixed_list.hpp"

namespace quicstep::common {

namespace tls_ext {
inline constexpr std::uint16_t server_name = 0x0000;
inline constexpr std::uint16_t supported_groups = 0x000a;
inline constexpr std::uint16_t alpn = 0x0010;
inline constexpr std::uint16_t pre_shared_key = 0x0029;
inline constexpr std::uint16_t supported_versions = 0x002b;
inline constexpr std::uint16_t key_share = 0x0033;
inline constexpr std::uint16_t quic_transport_parameters = 0x0039;
inline constexpr std::uint16_t encrypted_client_hello = 0xfe0d;
}  // namespace tls_ext

inline constexpr std::uint8_t kHandshakeClientHello = 1;
inline constexpr std::size_t kHandshakeHeaderLength = 4;  // msg_type u8 + length u24
inline constexpr std::size_t kMaxHostNameLength = 253;    // RFC 1035, without a final dot

// Bounds on what is kept. Real clients stay far below them (Chrome: 1 ALPN over QUIC,
// 3 key shares, 3 versions, ~18 extensions); more is limit_exceeded, not truncation.
inline constexpr std::size_t kMaxAlpnProtocols = 16;
inline constexpr std::size_t kMaxKeyShares = 16;
inline constexpr std::size_t kMaxSupportedVersions = 16;
inline constexpr std::size_t kMaxExtensions = 64;

struct KeyShareEntry {
  std::uint16_t group = 0;
  Bytes key_exchange;
};

struct ClientHello {
  std::uint16_t legacy_version = 0;
  Bytes random;               // 32 bytes
  Bytes session_id;           // 0..32 bytes
  Bytes cipher_suites;        // the raw list of u16 code points, even length >= 2
  Bytes compression_methods;  // 1..255 bytes
  std::size_t message_length = 0;  // header + body: bytes of the input this message used

  // Every extension type, in the order sent (for fingerprints), GREASE included.
  FixedList<std::uint16_t, kMaxExtensions> extension_types;

  bool has_server_name = false;
  FixedList<Bytes, kMaxAlpnProtocols> alpn;  // empty when there is no ALPN extension
  FixedList<std::uint16_t, kMaxSupportedVersions> supported_versions;
  FixedList<KeyShareEntry, kMaxKeyShares> key_shares;
  bool has_ech = false;
  bool has_quic_transport_parameters = false;
  Bytes quic_transport_parameters;  // the extension's data, unparsed

  // The SNI host name, lower-cased; empty when has_server_name is false.
  std::string_view server_name() const { return {host_.data(), host_length_}; }
  std::size_t cipher_suite_count() const { return cipher_suites.size() / 2; }
  bool offers_tls13() const;

  // Internal storage of server_name(); set by the parser.
  std::array<char, kMaxHostNameLength> host_{};
  std::size_t host_length_ = 0;
};

// Parses the ClientHello at the start of `handshake`. Bytes after the message are ignored
// (message_length says where it ended).
// Errors:
//   incomplete      `handshake` is a prefix of a message: wait for more bytes
//                   (client_hello_needed_length says how many);
//   bad_value       not a ClientHello (msg_type != 1), legacy_version not 3.x, session id
//                   over 32 bytes, no cipher suite or compression method, an empty ALPN or
//                   SNI list or name, a host name that is not a plausible DNS name (empty
//                   or >63-byte label, characters other than letters, digits, '-' and '_',
//                   a numeric last label as in an IP literal, a final dot), an SNI name type
//                   other than host_name or two host names, a duplicate extension,
//                   pre_shared_key not last, an empty key_exchange;
//   bad_length      a length inside the message disagrees with the message length (the
//                   message is complete but its fields do not fit it), odd-length u16 lists;
//   limit_exceeded  more extensions, ALPN protocols, key shares or versions than kept.
Result<ClientHello> parse_client_hello(Bytes handshake);

// How many bytes the ClientHello at the start of `prefix` occupies in total, header
// included, as far as `prefix` tells: kHandshakeHeaderLength while the header is not yet in
// (ask again with more), then 4 + the message length. Complete when <= prefix.size().
// Errors: bad_value (the first byte is not msg_type client_hello).
Result<std::size_t> client_hello_needed_length(Bytes prefix);

// Whether `name` is a plausible DNS host name as SNI carries it (the rules listed under
// bad_value above; case-insensitive).
bool is_plausible_host_name(std::string_view name);

}  // namespace quicstep::common
