// The TUN engine's WireGuard configuration (docs/DESIGN.md, "Processes and the protocols
// between them"): the wg-quick file the engine is given (--wg-config) parsed into a plain
// struct, and rendered as the UAPI `set=1` request the engine writes to the WireGuard
// helper's fd 4 (client/tun/wg_helper/README.md; wireguard-go's device.IpcHandle).
//
// The file is the one the Android app writes (WgQuickWriter.java), or a user's wg-quick file
// on Linux: [Interface] and [Peer] sections, `Key = value` lines, keys and section names
// case-insensitive, `#` comments to the end of the line, blank lines, CRLF or LF; Address,
// DNS and AllowedIPs take comma-separated lists and may repeat. Keys are 32 bytes in
// standard base64 in the file and lowercase hex in the UAPI. An Endpoint's host name is
// looked up by the caller's EndpointLookup, before the engine starts (the Linux frontend's
// getaddrinfo); without one, endpoints must be numeric (on Android the app resolves names in
// Java: the engine's own lookups would enter its VPN), never resolved in the engine.
//
// Refused, with the file, the line and the bad value quoted (core::ConfigError, as
// parse_config): every error found is reported, not only the first.
//   - a line that is neither a section header nor `Key = value`; a section other than
//     [Interface] and [Peer]; a key before the first section; a second [Interface];
//   - a key unknown in its section (the message lists the known ones); an empty value or an
//     empty list item; a second PrivateKey, ListenPort, FwMark, MTU, PublicKey,
//     PresharedKey, Endpoint or PersistentKeepalive in the same section;
//   - a key that is not base64, not canonical base64, or not 32 bytes;
//   - ListenPort not 0-65535; FwMark neither `off` nor 0-0xffffffff (decimal or 0x hex);
//     MTU not 1280-65535; PersistentKeepalive neither `off` nor 0-65535;
//   - an Address or AllowedIPs item that is not a numeric address with an optional /length
//     within its family's bits; a DNS item neither an address nor a search domain;
//   - an Endpoint that is not `a.b.c.d:port`, `[v6]:port` or `name:port` with a port in
//     1-65535; a name without an EndpointLookup, or one that the lookup could not resolve
//     (its reason quoted);
//   - a missing [Interface], a missing [Peer], or a section without its required keys:
//     [Interface] PrivateKey and Address (the TUN's address is the tunnel address), [Peer]
//     PublicKey, Endpoint (the engine starts the handshake) and AllowedIPs. These are the
//     keys WgQuickParser.java requires too, so a file the app wrote always parses.
// Accepted and ignored, reported in WgQuickLoad::ignored: wg-quick's own keys (Table, PreUp,
// PostUp, PreDown, PostDown, SaveConfig), which the engine has no use for: it sets no routes
// and runs no hooks.
//
// Secrets: the values of PrivateKey and PresharedKey never appear in an error, and a quoted
// value that could hold a key (a long run of base64 characters) is not shown either.
// No I/O: the caller reads the file. Allocates: for start-up, never the packet path.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/core/policy_config.hpp"
#include "common/error.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::client::tun {

// A Curve25519 key, or a preshared key: 32 bytes.
using WgKey = std::array<std::uint8_t, 32>;

// An address with a prefix length: an interface address (its host bits kept) or an
// allowed-IPs network.
struct IpPrefix {
  common::IpAddress address;
  std::uint8_t length = 0;  // <= 32 for IPv4, <= 128 for IPv6

  // "10.8.0.2/32", "fd00::2/128" (inet_ntop's form).
  std::string to_string() const;
  friend bool operator==(const IpPrefix&, const IpPrefix&) = default;
};

// A peer's numeric endpoint.
struct WgEndpoint {
  common::IpAddress address;
  std::uint16_t port = 0;  // 1-65535
  std::string host;        // the name the file gave, looked up to `address`; empty: numeric

  // "198.18.0.1:51820", "[2001:db8::1]:51820": the form the UAPI's endpoint= takes.
  std::string to_string() const;
  friend bool operator==(const WgEndpoint&, const WgEndpoint&) = default;
};

struct WgPeer {
  WgKey public_key{};
  std::optional<WgKey> preshared_key;  // unset: none
  WgEndpoint endpoint;                 // required by the parser
  std::vector<IpPrefix> allowed_ips;   // in file order; at least one
  // Seconds between keepalives; 0 = off (`off` in the file); unset: not in the file.
  std::optional<std::uint16_t> persistent_keepalive;
  std::uint32_t line = 0;  // the line of its [Peer], for messages
};

struct WgQuickConfig {
  WgKey private_key{};
  std::optional<std::uint16_t> listen_port;  // unset: wireguard-go picks one
  std::optional<std::uint32_t> fwmark;       // 0 = off; unset: not in the file
  std::vector<IpPrefix> addresses;           // the tunnel's (the TUN's) addresses, v4 and v6
  std::vector<common::IpAddress> dns_servers;
  std::vector<std::string> dns_search;       // DNS items that are names: search domains
  std::optional<std::uint16_t> mtu;          // the channel's MTU (the helper's --mtu)
  std::vector<WgPeer> peers;                 // at least one
};

// A wg-quick key the engine accepts and ignores.
struct IgnoredKey {
  std::uint32_t line = 0;
  std::string key;  // as spelled in the file ("PostUp")
};

struct WgQuickLoad {
  WgQuickConfig config;                   // meaningful only when ok()
  std::vector<core::ConfigError> errors;  // empty when ok(); in the order found (a
                                          // section's missing keys when it ends)
  std::vector<IgnoredKey> ignored;        // for a log line each
  bool ok() const { return errors.empty(); }
};

// Looks up an Endpoint's host name: an address, or why not (a sentence with the system's
// reason). Called once per name, at start-up.
using EndpointLookup =
    std::function<common::Result<common::IpAddress, common::Failure>(const std::string& host)>;

// Parses the wg-quick `text`; `file` names it in errors ("wg0.conf:4: ..."). Errors: the
// header's list. `lookup` empty: host names are refused.
WgQuickLoad parse_wg_quick(std::string_view text, std::string_view file,
                           const EndpointLookup& lookup = {});

// The UAPI request that configures a helper's device from `config`: "set=1", then
// private_key, listen_port and fwmark (each only when set), replace_peers=true, and for each
// peer public_key, preshared_key (when set), endpoint, persistent_keepalive_interval (when
// set), replace_allowed_ips=true and one allowed_ip per network; ends with an empty line.
// Keys in lowercase hex. Holds the private key: the caller writes it to fd 4 and logs none
// of it. Precondition: `config` came from a parse_wg_quick that was ok().
std::string render_uapi_set(const WgQuickConfig& config);

// A key as the UAPI spells it: 64 lowercase hex digits (get=1's public_key, too).
std::string key_to_hex(const WgKey& key);

}  // namespace quicstep::client::tun
