// Test support: a fluent builder of TLS ClientHello messages, and helpers that wrap them
// into QUIC CRYPTO frames or TLS records. Header-only; for unit tests, benchmarks and the
// censor's and router's tests. Never used on untrusted input.
//
//   auto hello = ClientHelloBuilder::chrome_quic("example.com").build();   // ~1.8 KB
//   auto bad = ClientHelloBuilder().sni("a.example").extension(0x0000, {}).build();
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/byte_writer.hpp"

namespace quicstep::test {

using ByteVector = std::vector<std::uint8_t>;

// X25519MLKEM768 (draft-ietf-tls-ecdhe-mlkem): a 1,184-byte ML-KEM-768 encapsulation key
// followed by a 32-byte X25519 share.
inline constexpr std::uint16_t kGroupX25519MLKEM768 = 0x11ec;
inline constexpr std::uint16_t kGroupX25519 = 0x001d;
inline constexpr std::size_t kX25519MLKEM768ShareLength = 1216;

// Decodes hex, ignoring whitespace. Precondition: well-formed (tests' own constants).
inline ByteVector from_hex(std::string_view hex) {
  auto nibble = [](char c) -> std::uint8_t {
    if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
    return static_cast<std::uint8_t>(c - 'A' + 10);
  };
  ByteVector out;
  int high = -1;
  for (const char c : hex) {
    if (c == ' ' || c == '\n' || c == '\t') continue;
    if (high < 0) {
      high = nibble(c);
    } else {
      out.push_back(static_cast<std::uint8_t>((high << 4) | nibble(c)));
      high = -1;
    }
  }
  return out;
}

class ClientHelloBuilder {
 public:
  ClientHelloBuilder() { random_.assign(32, 0x5a); }

  ClientHelloBuilder& legacy_version(std::uint16_t v) { version_ = v; return *this; }
  ClientHelloBuilder& random(ByteVector r) { random_ = std::move(r); return *this; }
  ClientHelloBuilder& session_id(ByteVector id) { session_id_ = std::move(id); return *this; }
  ClientHelloBuilder& cipher_suites(std::vector<std::uint16_t> s) { suites_ = std::move(s); return *this; }
  ClientHelloBuilder& compression_methods(ByteVector m) { compression_ = std::move(m); return *this; }
  // Leave out the extensions block entirely (a TLS 1.2-era ClientHello).
  ClientHelloBuilder& no_extensions() { no_extensions_ = true; return *this; }

  // Appends an extension with raw data; duplicates are kept (to test their rejection).
  ClientHelloBuilder& extension(std::uint16_t type, ByteVector data) {
    extensions_.emplace_back(type, std::move(data));
    return *this;
  }
  ClientHelloBuilder& sni(std::string_view host) {
    common::ByteWriter w;
    w.u16(static_cast<std::uint16_t>(host.size() + 3)).u8(0);
    w.u16(static_cast<std::uint16_t>(host.size())).bytes(as_bytes(host));
    return extension(0x0000, w.take());
  }
  ClientHelloBuilder& alpn(const std::vector<std::string>& protocols) {
    common::ByteWriter list;
    for (const auto& p : protocols) list.u8(static_cast<std::uint8_t>(p.size())).bytes(as_bytes(p));
    return extension(0x0010, u16_prefixed(list.take()));
  }
  ClientHelloBuilder& supported_versions(const std::vector<std::uint16_t>& versions) {
    common::ByteWriter w;
    w.u8(static_cast<std::uint8_t>(versions.size() * 2));
    for (auto v : versions) w.u16(v);
    return extension(0x002b, w.take());
  }
  ClientHelloBuilder& supported_groups(const std::vector<std::uint16_t>& groups) {
    return extension(0x000a, u16_list(groups));
  }
  ClientHelloBuilder& signature_algorithms(const std::vector<std::uint16_t>& algorithms) {
    return extension(0x000d, u16_list(algorithms));
  }
  // key_share with one entry per (group, key length); key bytes are a recognisable pattern.
  ClientHelloBuilder& key_shares(const std::vector<std::pair<std::uint16_t, std::size_t>>& shares) {
    common::ByteWriter list;
    for (const auto& [group, length] : shares) {
      list.u16(group).u16(static_cast<std::uint16_t>(length));
      for (std::size_t i = 0; i < length; ++i) list.u8(static_cast<std::uint8_t>(i * 7 + group));
    }
    return extension(0x0033, u16_prefixed(list.take()));
  }
  // An ECH extension (outer, as GREASE ECH looks): config id, cipher suite, enc, payload.
  ClientHelloBuilder& ech(std::size_t payload_length) {
    common::ByteWriter w;
    w.u8(0).u16(0x0001).u16(0x0001).u8(0x42).u16(32);  // outer, HKDF-SHA256, AES-128-GCM
    for (int i = 0; i < 32; ++i) w.u8(static_cast<std::uint8_t>(i));
    w.u16(static_cast<std::uint16_t>(payload_length));
    for (std::size_t i = 0; i < payload_length; ++i) w.u8(static_cast<std::uint8_t>(i ^ 0x5c));
    return extension(0xfe0d, w.take());
  }
  ClientHelloBuilder& quic_transport_parameters(ByteVector params) {
    return extension(0x0039, std::move(params));
  }
  // Permutes the extensions, as Chrome does, deterministically from `seed`.
  ClientHelloBuilder& shuffle_extensions(std::uint32_t seed) {
    for (std::size_t i = extensions_.size(); i > 1; --i) {
      seed = seed * 1664525u + 1013904223u;
      std::swap(extensions_[i - 1], extensions_[(seed >> 8) % i]);
    }
    return *this;
  }

  // The body (after msg_type and length).
  ByteVector body() const {
    common::ByteWriter w;
    w.u16(version_).bytes(random_);
    w.u8(static_cast<std::uint8_t>(session_id_.size())).bytes(session_id_);
    w.u16(static_cast<std::uint16_t>(suites_.size() * 2));
    for (auto s : suites_) w.u16(s);
    w.u8(static_cast<std::uint8_t>(compression_.size())).bytes(compression_);
    if (no_extensions_) return w.take();
    common::ByteWriter exts;
    for (const auto& [type, data] : extensions_) {
      exts.u16(type).u16(static_cast<std::uint16_t>(data.size())).bytes(data);
    }
    w.u16(static_cast<std::uint16_t>(exts.size())).bytes(exts.buffer());
    return w.take();
  }
  // The handshake message: msg_type client_hello (1), u24 length, body.
  ByteVector build() const {
    const ByteVector b = body();
    common::ByteWriter w;
    w.u8(1).u24(static_cast<std::uint32_t>(b.size())).bytes(b);
    return w.take();
  }

  // A ClientHello shaped like Chromium's over QUIC: GREASE, X25519MLKEM768 + X25519 key
  // shares (~1.8 KB in all, so it spans two Initial packets), ALPN h3, GREASE ECH.
  static ClientHelloBuilder chrome_quic(std::string_view host) {
    ClientHelloBuilder b;
    b.cipher_suites({0x1301, 0x1302, 0x1303});
    b.extension(0x0a0a, {});
    b.sni(host).supported_groups({0x2a2a, kGroupX25519MLKEM768, kGroupX25519, 0x0017, 0x0018});
    b.alpn({"h3"}).signature_algorithms({0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501});
    b.key_shares({{0x2a2a, 1}, {kGroupX25519MLKEM768, kX25519MLKEM768ShareLength}, {kGroupX25519, 32}});
    b.extension(0x002d, {0x01, 0x01}).supported_versions({0x3a3a, 0x0304});
    b.extension(0x001b, {0x02, 0x00, 0x02}).extension(0x44cd, {0x00, 0x03, 0x02, 0x68, 0x33});
    b.quic_transport_parameters(from_hex("0104800075300304800005dc0408ffffffffffffffff"
                                         "050480600000060480600000070480600000080240640902406480ff73db0c"
                                         "000000016b3343cf00000001"));
    b.ech(208).extension(0x1a1a, {0x00});
    return b;
  }
  // A ClientHello shaped like Chromium's over TCP: session id, more suites, h2 + http/1.1.
  static ClientHelloBuilder chrome_tcp(std::string_view host) {
    ClientHelloBuilder b = chrome_quic(host);
    b.session_id(ByteVector(32, 0xab));
    b.cipher_suites({0x8a8a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9,
                     0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035});
    b.extensions_.erase(std::remove_if(b.extensions_.begin(), b.extensions_.end(),
                                       [](const auto& e) { return e.first == 0x0010 || e.first == 0x0039; }),
                        b.extensions_.end());
    b.alpn({"h2", "http/1.1"});
    return b;
  }

 private:
  static std::span<const std::uint8_t> as_bytes(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
  }
  static ByteVector u16_prefixed(const ByteVector& data) {
    common::ByteWriter w;
    w.u16(static_cast<std::uint16_t>(data.size())).bytes(data);
    return w.take();
  }
  static ByteVector u16_list(const std::vector<std::uint16_t>& values) {
    common::ByteWriter w;
    w.u16(static_cast<std::uint16_t>(values.size() * 2));
    for (auto v : values) w.u16(v);
    return w.take();
  }

  std::uint16_t version_ = 0x0303;
  ByteVector random_;
  ByteVector session_id_;
  std::vector<std::uint16_t> suites_{0x1301};
  ByteVector compression_{0x00};
  bool no_extensions_ = false;
  std::vector<std::pair<std::uint16_t, ByteVector>> extensions_;
};

// A CRYPTO frame (type 0x06) carrying `data` at stream `offset`.
inline ByteVector crypto_frame(std::uint64_t offset, std::span<const std::uint8_t> data) {
  common::ByteWriter w;
  w.u8(0x06).varint(offset).varint(data.size()).bytes(data);
  return w.take();
}

// `handshake` cut into TLS handshake records of at most `max_fragment` bytes each.
inline ByteVector tls_records(std::span<const std::uint8_t> handshake, std::size_t max_fragment,
                              std::uint16_t record_version = 0x0301) {
  common::ByteWriter w;
  for (std::size_t pos = 0; pos < handshake.size(); pos += max_fragment) {
    const auto fragment = handshake.subspan(pos, std::min(max_fragment, handshake.size() - pos));
    w.u8(22).u16(record_version).u16(static_cast<std::uint16_t>(fragment.size())).bytes(fragment);
  }
  return w.take();
}

}  // namespace quicstep::test
