#include "common/tls_client_hello.hpp"

#include <algorithm>

namespace quicstep::common {
namespace {

// Inside a message whose length is already known complete, running out of bytes means a
// length field lied: bad_length, not truncated or incomplete.
template <typename T>
Result<T> inner(Result<T> r) {
  if (!r && r.error() == Error::truncated) return Error::bad_length;
  return r;
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_';
}

// server_name (RFC 6066 §3): a list of (name_type, name); only host_name (0), at most once.
Status parse_server_name(Bytes data, ClientHello& hello) {
  ByteReader r(data);
  auto list = inner(r.u16_prefixed());
  if (!list) return list.error();
  if (!r.empty()) return Error::bad_length;
  if (list->empty()) return Error::bad_value;
  ByteReader names(*list);
  while (!names.empty()) {
    auto type = inner(names.u8());
    if (!type) return type.error();
    if (*type != 0 || hello.has_server_name) return Error::bad_value;
    auto name = inner(names.u16_prefixed());
    if (!name) return name.error();
    if (name->empty() || name->size() > kMaxHostNameLength) return Error::bad_value;
    // Copy, lower-cased, byte by byte; then validate the copy.
    for (std::size_t i = 0; i < name->size(); ++i) {
      const auto c = static_cast<char>((*name)[i]);
      hello.host_[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    const std::string_view host(hello.host_.data(), name->size());
    if (!is_plausible_host_name(host)) return Error::bad_value;
    hello.host_length_ = host.size();
    hello.has_server_name = true;
  }
  return {};
}

// application_layer_protocol_negotiation (RFC 7301 §3.1): non-empty list of non-empty names.
Status parse_alpn(Bytes data, ClientHello& hello) {
  ByteReader r(data);
  auto list = inner(r.u16_prefixed());
  if (!list) return list.error();
  if (!r.empty()) return Error::bad_length;
  if (list->empty()) return Error::bad_value;
  ByteReader protocols(*list);
  while (!protocols.empty()) {
    auto name = inner(protocols.u8_prefixed());
    if (!name) return name.error();
    if (name->empty()) return Error::bad_value;
    if (!hello.alpn.push_back(*name)) return Error::limit_exceeded;
  }
  return {};
}

// supported_versions in a ClientHello (RFC 8446 §4.2.1): u8-prefixed list of u16, >= 1.
Status parse_supported_versions(Bytes data, ClientHello& hello) {
  ByteReader r(data);
  auto list = inner(r.u8_prefixed());
  if (!list) return list.error();
  if (!r.empty() || list->size() % 2 != 0) return Error::bad_length;
  if (list->empty()) return Error::bad_value;
  ByteReader versions(*list);
  while (!versions.empty()) {
    auto v = versions.u16();
    if (!v) return Error::bad_length;
    if (!hello.supported_versions.push_back(*v)) return Error::limit_exceeded;
  }
  return {};
}

// key_share in a ClientHello (RFC 8446 §4.2.8): u16-prefixed list of (group, key_exchange).
// The list may be empty (a client that waits for HelloRetryRequest).
Status parse_key_share(Bytes data, ClientHello& hello) {
  ByteReader r(data);
  auto list = inner(r.u16_prefixed());
  if (!list) return list.error();
  if (!r.empty()) return Error::bad_length;
  ByteReader shares(*list);
  while (!shares.empty()) {
    auto group = inner(shares.u16());
    if (!group) return group.error();
    auto key = inner(shares.u16_prefixed());
    if (!key) return key.error();
    if (key->empty()) return Error::bad_value;
    if (!hello.key_shares.push_back(KeyShareEntry{*group, *key})) return Error::limit_exceeded;
  }
  return {};
}

Status parse_extension(std::uint16_t type, Bytes data, ClientHello& hello) {
  switch (type) {
    case tls_ext::server_name:
      return parse_server_name(data, hello);
    case tls_ext::alpn:
      return parse_alpn(data, hello);
    case tls_ext::supported_versions:
      return parse_supported_versions(data, hello);
    case tls_ext::key_share:
      return parse_key_share(data, hello);
    case tls_ext::encrypted_client_hello:
      hello.has_ech = true;
      return {};
    case tls_ext::quic_transport_parameters:
      hello.has_quic_transport_parameters = true;
      hello.quic_transport_parameters = data;
      return {};
    default:
      return {};  // not needed for a decision; its contents are the server's business
  }
}

// The extensions block: u16 length equal to the rest of the body, then (type, data)s.
Status parse_extensions(ByteReader& body, ClientHello& hello) {
  if (body.empty()) return {};  // TLS 1.2 allows a ClientHello without extensions
  auto block = inner(body.u16_prefixed());
  if (!block) return block.error();
  if (!body.empty()) return Error::bad_length;
  ByteReader exts(*block);
  while (!exts.empty()) {
    auto type = inner(exts.u16());
    if (!type) return type.error();
    auto data = inner(exts.u16_prefixed());
    if (!data) return data.error();
    // RFC 8446 §4.2: no two extensions of the same type; pre_shared_key comes last.
    const auto& seen = hello.extension_types;
    if (std::find(seen.begin(), seen.end(), *type) != seen.end()) return Error::bad_value;
    if (!seen.empty() && seen[seen.size() - 1] == tls_ext::pre_shared_key) {
      return Error::bad_value;
    }
    if (!hello.extension_types.push_back(*type)) return Error::limit_exceeded;
    if (auto s = parse_extension(*type, *data, hello); !s) return s;
  }
  return {};
}

// The fixed fields of the body, up to the extensions.
Status parse_fixed_fields(ByteReader& body, ClientHello& hello) {
  auto version = inner(body.u16());
  if (!version) return version.error();
  if ((*version >> 8) != 0x03) return Error::bad_value;
  hello.legacy_version = *version;
  auto random = inner(body.bytes(32));
  if (!random) return random.error();
  hello.random = *random;
  auto session_id = inner(body.u8_prefixed());
  if (!session_id) return session_id.error();
  if (session_id->size() > 32) return Error::bad_value;
  hello.session_id = *session_id;
  auto suites = inner(body.u16_prefixed());
  if (!suites) return suites.error();
  if (suites->size() % 2 != 0) return Error::bad_length;
  if (suites->empty()) return Error::bad_value;
  hello.cipher_suites = *suites;
  auto compression = inner(body.u8_prefixed());
  if (!compression) return compression.error();
  if (compression->empty()) return Error::bad_value;
  hello.compression_methods = *compression;
  return {};
}

}  // namespace

bool ClientHello::offers_tls13() const {
  return std::find(supported_versions.begin(), supported_versions.end(), 0x0304) !=
         supported_versions.end();
}

bool is_plausible_host_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostNameLength) return false;
  std::size_t label_length = 0;
  bool label_numeric = true;
  for (const char c : name) {
    if (c == '.') {
      if (label_length == 0) return false;  // empty label: leading dot or ".."
      label_length = 0;
      label_numeric = true;
      continue;
    }
    if (!is_label_char(c)) return false;
    if (++label_length > 63) return false;
    label_numeric = label_numeric && c >= '0' && c <= '9';
  }
  // A final dot leaves an empty last label. No top-level domain is all digits, so a
  // numeric last label means an IPv4 literal, which SNI forbids (RFC 6066 §3).
  return label_length != 0 && !label_numeric;
}

Result<std::size_t> client_hello_needed_length(Bytes prefix) {
  if (prefix.empty()) return kHandshakeHeaderLength;
  if (prefix[0] != kHandshakeClientHello) return Error::bad_value;
  ByteReader r(prefix);
  (void)r.u8();
  auto length = r.u24();
  if (!length) return kHandshakeHeaderLength;
  return kHandshakeHeaderLength + *length;
}

Result<ClientHello> parse_client_hello(Bytes handshake) {
  auto needed = client_hello_needed_length(handshake);
  if (!needed) return needed.error();
  if (*needed > handshake.size()) return Error::incomplete;
  ClientHello hello;
  hello.message_length = *needed;
  ByteReader body(handshake.subspan(kHandshakeHeaderLength, *needed - kHandshakeHeaderLength));
  if (auto s = parse_fixed_fields(body, hello); !s) return s.error();
  if (auto s = parse_extensions(body, hello); !s) return s.error();
  return hello;
}

}  // namespace quicstep::common
