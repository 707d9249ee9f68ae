#include "client/tun/wg_quick_uapi.hpp"

#include <arpa/inet.h>
#include <nettle/base64.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <utility>

namespace quicstep::client::tun {
namespace {

enum class Section : std::uint8_t {
  none,       // before the first header
  interface,  // [Interface]
  peer,       // [Peer]
  skipped,    // a section already reported as an error: its keys are not checked
};

enum class Kind : std::uint8_t {
  private_key, listen_port, fwmark, address, dns, mtu, ignored,
  public_key, preshared_key, endpoint, allowed_ips, keepalive,
};

struct KeyInfo {
  std::string_view name;  // as wg-quick(8) spells it
  Section section;
  Kind kind;
  bool repeatable;        // a list (appended to) or a wg-quick hook: may appear again
  bool required;
  std::string_view why;   // said when a required key is missing
};

constexpr std::array kKeys = {
    KeyInfo{"PrivateKey", Section::interface, Kind::private_key, false, true, ""},
    KeyInfo{"ListenPort", Section::interface, Kind::listen_port, false, false, ""},
    KeyInfo{"FwMark", Section::interface, Kind::fwmark, false, false, ""},
    KeyInfo{"Address", Section::interface, Kind::address, true, true,
            " (the TUN's address is the tunnel address)"},
    KeyInfo{"DNS", Section::interface, Kind::dns, true, false, ""},
    KeyInfo{"MTU", Section::interface, Kind::mtu, false, false, ""},
    KeyInfo{"Table", Section::interface, Kind::ignored, true, false, ""},
    KeyInfo{"PreUp", Section::interface, Kind::ignored, true, false, ""},
    KeyInfo{"PostUp", Section::interface, Kind::ignored, true, false, ""},
    KeyInfo{"PreDown", Section::interface, Kind::ignored, true, false, ""},
    KeyInfo{"PostDown", Section::interface, Kind::ignored, true, false, ""},
    KeyInfo{"SaveConfig", Section::interface, Kind::ignored, true, false, ""},
    KeyInfo{"PublicKey", Section::peer, Kind::public_key, false, true, ""},
    KeyInfo{"PresharedKey", Section::peer, Kind::preshared_key, false, false, ""},
    KeyInfo{"Endpoint", Section::peer, Kind::endpoint, false, true,
            " (the engine starts the handshake, so it needs the peer's address)"},
    KeyInfo{"AllowedIPs", Section::peer, Kind::allowed_ips, true, true, ""},
    KeyInfo{"PersistentKeepalive", Section::peer, Kind::keepalive, false, false, ""},
};

std::string_view section_name(Section s) {
  return s == Section::interface ? "[Interface]" : "[Peer]";
}

bool iequals(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) {
           return lower(x) == lower(y);
         });
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' ||
                                         c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '+' || c == '/';
}

// Whether `text` could hold a key, or a good part of one: 32 or more base64 characters in
// a row (a key has 43). Such text is never quoted, so that a private key on a line the
// parser cannot read (a broken-off line, a typo in its key name) stays out of the logs.
bool may_hold_key(std::string_view text) {
  std::size_t run = 0;
  for (const char c : text) {
    run = is_base64_char(c) ? run + 1 : 0;
    if (run >= 32) return true;
  }
  return false;
}

// 'text', cut to 64 characters, control characters as '?'. Only for text known to hold
// no secret (a public key); anything else goes through quote().
std::string verbatim(std::string_view text) {
  std::string s(text.substr(0, text.size() > 64 ? 61 : text.size()));
  if (text.size() > 64) s += "...";
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return "'" + s + "'";
}

std::string quote(std::string_view text) {
  return may_hold_key(text) ? "(not shown: it may hold a key)" : verbatim(text);
}

// A whole decimal number in [0, max]: no sign, no spaces, every character consumed.
std::optional<std::uint32_t> parse_decimal(std::string_view s, std::uint32_t max, int base = 10) {
  std::uint32_t v = 0;
  const char* last = s.data() + s.size();
  const auto [end, ec] = std::from_chars(s.data(), last, v, base);
  if (s.empty() || ec != std::errc{} || end != last || v > max) return std::nullopt;
  return v;
}

// A numeric IPv4 or IPv6 address (inet_pton: never a name, no IPv6 scope).
std::optional<common::IpAddress> parse_address(std::string_view s) {
  if (s.empty() || s.size() >= INET6_ADDRSTRLEN || s.find('\0') != std::string_view::npos) {
    return std::nullopt;  // inet_pton reads up to a NUL: one inside must not cut the text
  }
  const std::string z(s);
  std::array<std::uint8_t, 4> v4{};
  std::array<std::uint8_t, 16> v6{};
  if (inet_pton(AF_INET, z.c_str(), v4.data()) == 1) return common::IpAddress::v4(v4);
  if (inet_pton(AF_INET6, z.c_str(), v6.data()) == 1) return common::IpAddress::v6(v6);
  return std::nullopt;
}

// "address[/length]"; without a length, the single address (32 or 128), as wg(8) reads
// AllowedIPs and `ip address add` an Address.
std::optional<IpPrefix> parse_prefix(std::string_view s) {
  const auto slash = s.find('/');
  const auto address = parse_address(s.substr(0, slash));
  if (!address) return std::nullopt;
  const std::uint32_t bits = address->family == common::IpFamily::v4 ? 32 : 128;
  std::optional<std::uint32_t> length = bits;
  if (slash != std::string_view::npos) length = parse_decimal(s.substr(slash + 1), bits);
  if (!length) return std::nullopt;
  return IpPrefix{*address, static_cast<std::uint8_t>(*length)};
}

// A DNS name (WgQuickParser.java's Endpoint.isHostName): labels of 1-63 letters, digits and
// hyphens, not starting or ending with a hyphen, 253 characters at most, not all numeric.
bool is_host_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  bool letter = false;
  while (true) {
    const auto dot = s.find('.');
    const std::string_view label = s.substr(0, dot);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (const char c : label) {
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
      if (!alpha && !(c >= '0' && c <= '9')) return false;
      letter = letter || alpha;
    }
    if (dot == std::string_view::npos) return letter;
    s.remove_prefix(dot + 1);
  }
}

// Why `text` is not a 32-byte key in canonical standard base64 (44 characters, the last
// '='), or nothing when it is one, its bytes in *key.
std::optional<std::string> decode_key(std::string_view text, WgKey* key) {
  static constexpr std::string_view kNotBase64 =
      "is not base64 (a key is 44 characters, the last '=')";
  if (text.size() > 88) return "is " + std::to_string(text.size()) + " characters, not 44";
  std::array<std::uint8_t, BASE64_DECODE_LENGTH(88)> bytes{};
  std::size_t length = 0;
  base64_decode_ctx ctx;
  base64_decode_init(&ctx);
  if (base64_decode_update(&ctx, &length, bytes.data(), text.size(), text.data()) != 1 ||
      base64_decode_final(&ctx) != 1) {
    return std::string(kNotBase64);
  }
  if (length != key->size()) return "is " + std::to_string(length) + " bytes, not 32";
  // nettle skips white space inside the text; the file's form must be the one form.
  std::array<char, BASE64_ENCODE_RAW_LENGTH(32)> canonical{};
  base64_encode_raw(canonical.data(), key->size(), bytes.data());
  if (text != std::string_view(canonical.data(), canonical.size())) {
    return std::string(kNotBase64);
  }
  std::copy_n(bytes.begin(), key->size(), key->begin());
  return std::nullopt;
}

// Reads the lines of one file into a WgQuickLoad, collecting every error.
class Parser {
 public:
  Parser(std::string_view file, WgQuickLoad* out, const EndpointLookup& lookup)
      : file_(file), out_(out), lookup_(lookup) {}

  void line(std::uint32_t n, std::string_view raw);
  void finish();

 private:
  void error(std::uint32_t line, std::string message) {
    out_->errors.push_back({file_, line, 0, std::move(message)});
  }
  void error(std::string message) { error(line_, std::move(message)); }

  void header(std::string_view text);
  void close_section();
  void key_value(std::string_view key, std::string_view value);
  void interface_value(const KeyInfo& info, std::string_view value);
  void peer_value(const KeyInfo& info, std::string_view value);
  std::optional<WgKey> key(const KeyInfo& info, std::string_view value, bool secret);
  std::optional<std::uint32_t> number_or_off(const KeyInfo& info, std::string_view value,
                                             std::uint32_t max, std::string_view range);
  std::optional<WgEndpoint> endpoint(std::string_view value);
  template <typename Item>
  void each_item(const KeyInfo& info, std::string_view value, Item item);

  std::string file_;
  WgQuickLoad* out_;
  const EndpointLookup& lookup_;
  std::uint32_t line_ = 0;
  Section section_ = Section::none;
  std::uint32_t section_line_ = 0;
  std::uint32_t interface_line_ = 0;  // 0 until the [Interface] header
  // The line on which each of kKeys first appeared in the current section (0: not yet).
  std::array<std::uint32_t, kKeys.size()> seen_{};
};

void Parser::line(std::uint32_t n, std::string_view raw) {
  line_ = n;
  const std::string_view text = trim(raw.substr(0, raw.find('#')));
  if (text.empty()) return;
  if (text.front() == '[') {
    header(text);
    return;
  }
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || trim(text.substr(0, eq)).empty()) {
    error("not a section header or a 'Key = value' line: " + quote(text));
    return;
  }
  key_value(trim(text.substr(0, eq)), trim(text.substr(eq + 1)));
}

void Parser::header(std::string_view text) {
  close_section();
  seen_ = {};
  section_line_ = line_;
  if (iequals(text, "[Interface]")) {
    if (interface_line_ != 0) {
      error("a second [Interface] (the first is on line " + std::to_string(interface_line_) +
            ")");
      section_ = Section::skipped;
      return;
    }
    interface_line_ = line_;
    section_ = Section::interface;
  } else if (iequals(text, "[Peer]")) {
    WgPeer peer;
    peer.line = line_;
    out_->config.peers.push_back(std::move(peer));
    section_ = Section::peer;
  } else {
    error("not a section wg-quick knows (expected [Interface] or [Peer]): " + quote(text));
    section_ = Section::skipped;
  }
}

// Reports the required keys the section just read lacks, on its header's line.
void Parser::close_section() {
  if (section_ != Section::interface && section_ != Section::peer) return;
  for (std::size_t i = 0; i < kKeys.size(); ++i) {
    const KeyInfo& k = kKeys[i];
    if (k.section == section_ && k.required && seen_[i] == 0) {
      error(section_line_, std::string(section_name(section_)) + " has no " +
                               std::string(k.name) + std::string(k.why));
    }
  }
}

void Parser::finish() {
  close_section();
  if (interface_line_ == 0) error(0, "no [Interface] section");
  if (out_->config.peers.empty()) error(0, "no [Peer] section (the engine needs its peer)");
}

void Parser::key_value(std::string_view key, std::string_view value) {
  if (section_ == Section::none) {
    error(quote(key) + " comes before any section (a key belongs in [Interface] or [Peer])");
    return;
  }
  if (section_ == Section::skipped) return;  // its header has been reported
  const auto* info = std::find_if(kKeys.begin(), kKeys.end(),
                                  [&](const KeyInfo& k) { return iequals(k.name, key); });
  if (info == kKeys.end() || info->section != section_) {
    std::string message = "unknown key " + quote(key) + " in " +
                          std::string(section_name(section_)) + " (expected one of:";
    for (const KeyInfo& k : kKeys) {
      if (k.section == section_) message += " '" + std::string(k.name) + "'";
    }
    if (info != kKeys.end()) {
      message += "; " + std::string(info->name) + " belongs in " +
                 std::string(section_name(info->section));
    }
    error(message + ")");
    return;
  }
  std::uint32_t& seen = seen_[static_cast<std::size_t>(info - kKeys.begin())];
  if (seen != 0 && !info->repeatable) {
    error("a second " + std::string(info->name) + " in " +
          std::string(section_name(section_)) + " (the first is on line " +
          std::to_string(seen) + ")");
    return;
  }
  if (seen == 0) seen = line_;
  if (info->kind == Kind::ignored) {
    out_->ignored.push_back({line_, std::string(key)});
    return;
  }
  if (value.empty()) {
    error(std::string(info->name) + " has no value");
    return;
  }
  if (section_ == Section::interface) {
    interface_value(*info, value);
  } else {
    peer_value(*info, value);
  }
}

// Calls item(text) for each comma-separated item of `value` until one returns false (it
// reported its error); an empty item is an error.
template <typename Item>
void Parser::each_item(const KeyInfo& info, std::string_view value, Item item) {
  while (true) {
    const auto comma = value.find(',');
    const std::string_view text = trim(value.substr(0, comma));
    if (text.empty()) {
      error(std::string(info.name) + " has an empty item in its list");
      return;
    }
    if (!item(text)) return;
    if (comma == std::string_view::npos) return;
    value.remove_prefix(comma + 1);
  }
}

void Parser::interface_value(const KeyInfo& info, std::string_view value) {
  WgQuickConfig& c = out_->config;
  const std::string name(info.name);
  switch (info.kind) {
    case Kind::private_key:
      if (auto k = key(info, value, true)) c.private_key = *k;
      break;
    case Kind::listen_port:
      if (auto v = parse_decimal(value, 65535)) {
        c.listen_port = static_cast<std::uint16_t>(*v);
      } else {
        error("ListenPort is not 0-65535: " + quote(value));
      }
      break;
    case Kind::fwmark:
      c.fwmark = number_or_off(info, value, 0xffffffffu, "0-0xffffffff");
      break;
    case Kind::address:
      each_item(info, value, [&](std::string_view item) {
        const auto prefix = parse_prefix(item);
        if (!prefix) {
          error(name + " is not an IP address with an optional /length: " + quote(item));
          return false;
        }
        c.addresses.push_back(*prefix);
        return true;
      });
      break;
    case Kind::dns:
      each_item(info, value, [&](std::string_view item) {
        if (const auto address = parse_address(item)) {
          c.dns_servers.push_back(*address);
        } else if (is_host_name(item)) {
          c.dns_search.emplace_back(item);  // wg-quick's reading: a name is a search domain
        } else {
          error(name + " is neither an IP address nor a search domain: " + quote(item));
          return false;
        }
        return true;
      });
      break;
    case Kind::mtu:
      if (auto v = parse_decimal(value, 65535); v && *v >= 1280) {
        c.mtu = static_cast<std::uint16_t>(*v);
      } else {
        error("MTU is not 1280-65535: " + quote(value));
      }
      break;
    default:
      break;  // kKeys pairs every other kind with [Peer] or as ignored
  }
}

void Parser::peer_value(const KeyInfo& info, std::string_view value) {
  WgPeer& p = out_->config.peers.back();
  switch (info.kind) {
    case Kind::public_key:
      if (auto k = key(info, value, false)) p.public_key = *k;
      break;
    case Kind::preshared_key:
      p.preshared_key = key(info, value, true);
      break;
    case Kind::endpoint:
      if (auto e = endpoint(value)) p.endpoint = *e;
      break;
    case Kind::allowed_ips:
      each_item(info, value, [&](std::string_view item) {
        const auto prefix = parse_prefix(item);
        if (!prefix) {
          error("AllowedIPs is not an IP address with an optional /length: " + quote(item));
          return false;
        }
        p.allowed_ips.push_back(*prefix);
        return true;
      });
      break;
    case Kind::keepalive:
      if (auto v = number_or_off(info, value, 65535, "0-65535")) {
        p.persistent_keepalive = static_cast<std::uint16_t>(*v);
      }
      break;
    default:
      break;  // kKeys pairs every other kind with [Interface]
  }
}

// A key's bytes. A secret key's value is never quoted, whatever is wrong with it.
std::optional<WgKey> Parser::key(const KeyInfo& info, std::string_view value, bool secret) {
  WgKey k{};
  if (const auto why = decode_key(value, &k)) {
    error(std::string(info.name) + " " + *why +
          (secret ? " (the value is secret: not shown)" : ": " + verbatim(value)));
    return std::nullopt;
  }
  return k;
}

// `off` (0), or a number in 0..max: decimal, or hexadecimal after 0x (wg(8) reads FwMark
// so; a keepalive in hex is as harmless).
std::optional<std::uint32_t> Parser::number_or_off(const KeyInfo& info, std::string_view value,
                                                   std::uint32_t max, std::string_view range) {
  if (iequals(value, "off")) return 0;
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  if (auto v = hex ? parse_decimal(value.substr(2), max, 16) : parse_decimal(value, max)) {
    return v;
  }
  error(std::string(info.name) + " is neither 'off' nor " + std::string(range) + ": " +
        quote(value));
  return std::nullopt;
}

// "a.b.c.d:port", "[v6]:port" or "name:port", port 1-65535. A name is looked up by the
// caller's lookup, or refused with its own message without one: the engine never resolves
// one (docs/DESIGN.md: names are resolved in Java on Android).
std::optional<WgEndpoint> Parser::endpoint(std::string_view value) {
  std::optional<common::IpAddress> address;
  std::string_view host;
  std::string_view port;
  if (value.front() == '[') {
    const auto close = value.find("]:");
    host = value.substr(1, close == std::string_view::npos ? 0 : close - 1);
    if (close != std::string_view::npos) port = value.substr(close + 2);
    address = parse_address(host);
    if (address && address->family != common::IpFamily::v6) address.reset();
  } else {
    const auto colon = value.rfind(':');
    host = value.substr(0, colon);
    if (colon != std::string_view::npos) port = value.substr(colon + 1);
    address = parse_address(host);
    if (address && address->family != common::IpFamily::v4) address.reset();  // v6: brackets
  }
  const auto number = parse_decimal(port, 65535);
  if (address && number && *number >= 1) {
    return WgEndpoint{*address, static_cast<std::uint16_t>(*number), {}};
  }
  if (!address && is_host_name(host) && number && *number >= 1 && lookup_) {
    auto found = lookup_(std::string(host));
    if (found) {
      return WgEndpoint{*found, static_cast<std::uint16_t>(*number), std::string(host)};
    }
    error("Endpoint " + quote(value) + ": " + found.error().message);
  } else if (!address && is_host_name(host) && !lookup_) {
    error("Endpoint has a host name, not an address: " + quote(value) +
          " (names are resolved before the engine, which never looks one up)");
  } else if (lookup_) {
    error("Endpoint is not address:port, [IPv6 address]:port or name:port with a port in "
          "1-65535: " + quote(value));
  } else {
    error("Endpoint is not address:port or [IPv6 address]:port with a port in 1-65535: " +
          quote(value));
  }
  return std::nullopt;
}

}  // namespace

std::string IpPrefix::to_string() const {
  return address.to_string() + "/" + std::to_string(length);
}

std::string WgEndpoint::to_string() const {
  const std::string host = address.to_string();
  return (address.family == common::IpFamily::v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::string key_to_hex(const WgKey& key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * key.size());
  for (const std::uint8_t b : key) {
    hex += kDigits[b >> 4];
    hex += kDigits[b & 0xf];
  }
  return hex;
}

WgQuickLoad parse_wg_quick(std::string_view text, std::string_view file,
                           const EndpointLookup& lookup) {
  WgQuickLoad out;
  Parser parser(file, &out, lookup);
  std::uint32_t n = 0;
  while (true) {
    const auto newline = text.find('\n');
    parser.line(++n, text.substr(0, newline));  // a CR before it is trimmed as white space
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  parser.finish();
  return out;
}

std::string render_uapi_set(const WgQuickConfig& config) {
  std::string s = "set=1\nprivate_key=" + key_to_hex(config.private_key) + "\n";
  if (config.listen_port) s += "listen_port=" + std::to_string(*config.listen_port) + "\n";
  if (config.fwmark) s += "fwmark=" + std::to_string(*config.fwmark) + "\n";
  s += "replace_peers=true\n";
  for (const WgPeer& p : config.peers) {
    s += "public_key=" + key_to_hex(p.public_key) + "\n";
    if (p.preshared_key) s += "preshared_key=" + key_to_hex(*p.preshared_key) + "\n";
    s += "endpoint=" + p.endpoint.to_string() + "\n";
    if (p.persistent_keepalive) {
      s += "persistent_keepalive_interval=" + std::to_string(*p.persistent_keepalive) + "\n";
    }
    // After public_key: the UAPI applies it to the peer just named.
    s += "replace_allowed_ips=true\n";
    for (const IpPrefix& a : p.allowed_ips) s += "allowed_ip=" + a.to_string() + "\n";
  }
  return s + "\n";  // the empty line ends the request
}

}  // namespace quicstep::client::tun
