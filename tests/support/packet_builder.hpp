// PacketBuilder: a fluent builder of IPv4/IPv6 packets with UDP or TCP, for table-driven
// tests (parsers, classifier, censor, BPF programs). Header-only; computes the IPv4 header
// checksum and the UDP/TCP checksums (pseudo-header included) itself, independently of
// common/, so tests can check the library's checksum code against it.
//
//   auto pkt = PacketBuilder().ipv4("198.18.0.1", "198.18.1.1").udp(40000, 53)
//                  .payload(query).build();
//   auto pkt6 = PacketBuilder().ipv6("2001:db8::1", "2001:db8::2").hop_by_hop()
//                  .fragment(0, true, 7).tcp(40000, 443).flags(tcp::kSyn).seq(1).build();
//
// Extension headers and the fragment header go into the IPv6 chain in call order. The
// "lies" (ipv4_ihl, ipv4_total_length, udp_length, ...) overwrite a field after the honest
// value was computed, for negative tests; checksums are computed over the bytes as built.
// Test code: a bad address string throws std::invalid_argument.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace quicstep::test {

using Ipv4Addr = std::array<std::uint8_t, 4>;
using Ipv6Addr = std::array<std::uint8_t, 16>;
using ByteVec = std::vector<std::uint8_t>;

inline Ipv4Addr ipv4_addr(std::string_view text) {
  Ipv4Addr a{};
  if (inet_pton(AF_INET, std::string(text).c_str(), a.data()) != 1) {
    throw std::invalid_argument("not an IPv4 address: " + std::string(text));
  }
  return a;
}

inline Ipv6Addr ipv6_addr(std::string_view text) {
  Ipv6Addr a{};
  if (inet_pton(AF_INET6, std::string(text).c_str(), a.data()) != 1) {
    throw std::invalid_argument("not an IPv6 address: " + std::string(text));
  }
  return a;
}

// Bytes from hex text; spaces, newlines and colons are skipped ("45 00 00 3c", "4500:003c").
inline ByteVec from_hex(std::string_view hex) {
  ByteVec out;
  int high = -1;
  for (const char c : hex) {
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0) {
      if (c == ' ' || c == '\n' || c == ':' || c == '\t') continue;
      throw std::invalid_argument(std::string("not a hex digit: ") + c);
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<std::uint8_t>(high << 4 | v));
      high = -1;
    }
  }
  if (high >= 0) throw std::invalid_argument("odd number of hex digits");
  return out;
}

inline ByteVec bytes_of(std::string_view text) { return ByteVec(text.begin(), text.end()); }

// TCP flag bits, as on the wire (byte 13 of the header).
namespace tcp {
inline constexpr std::uint8_t kFin = 0x01;
inline constexpr std::uint8_t kSyn = 0x02;
inline constexpr std::uint8_t kRst = 0x04;
inline constexpr std::uint8_t kPsh = 0x08;
inline constexpr std::uint8_t kAck = 0x10;
}  // namespace tcp

// RFC 1071 checksum helpers, kept apart from common/ on purpose (an independent oracle).
namespace checksum {
inline std::uint32_t add(std::uint32_t sum, std::span<const std::uint8_t> data) {
  for (std::size_t i = 0; i < data.size(); i += 2) {
    sum += static_cast<std::uint32_t>(data[i]) << 8;
    if (i + 1 < data.size()) sum += data[i + 1];
  }
  return sum;
}
inline std::uint16_t finish(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xffff);
}
}  // namespace checksum

class PacketBuilder {
 public:
  static constexpr std::uint8_t kProtoTcp = 6;
  static constexpr std::uint8_t kProtoUdp = 17;
  static constexpr std::uint8_t kNoNextHeader = 59;

  // --- Network layer ---
  PacketBuilder& ipv4(Ipv4Addr src, Ipv4Addr dst) {
    version_ = 4;
    src_.assign(src.begin(), src.end());
    dst_.assign(dst.begin(), dst.end());
    return *this;
  }
  PacketBuilder& ipv4(std::string_view src, std::string_view dst) {
    return ipv4(ipv4_addr(src), ipv4_addr(dst));
  }
  PacketBuilder& ipv6(Ipv6Addr src, Ipv6Addr dst) {
    version_ = 6;
    src_.assign(src.begin(), src.end());
    dst_.assign(dst.begin(), dst.end());
    return *this;
  }
  PacketBuilder& ipv6(std::string_view src, std::string_view dst) {
    return ipv6(ipv6_addr(src), ipv6_addr(dst));
  }
  // IPv4 TTL; IPv6 hop limit.
  PacketBuilder& ttl(std::uint8_t v) {
    ttl_ = v;
    return *this;
  }
  // IPv4 TOS; IPv6 traffic class.
  PacketBuilder& tos(std::uint8_t v) {
    tos_ = v;
    return *this;
  }
  PacketBuilder& flow_label(std::uint32_t v) {
    flow_label_ = v & 0xfffff;
    return *this;
  }
  PacketBuilder& ip_id(std::uint16_t v) {
    ip_id_ = v;
    return *this;
  }
  PacketBuilder& dont_fragment(bool v = true) {
    dont_fragment_ = v;
    return *this;
  }
  // IPv4 options, zero-padded (End of Options List) to a multiple of 4 bytes.
  PacketBuilder& ipv4_options(ByteVec options) {
    ipv4_options_ = std::move(options);
    while (ipv4_options_.size() % 4 != 0) ipv4_options_.push_back(0);
    return *this;
  }
  // A fragment: offset in 8-byte units. Call after ipv4() / ipv6(). IPv4: sets the header
  // fields (id becomes the IP ID). IPv6: adds a fragment header to the chain here.
  PacketBuilder& fragment(std::uint16_t offset, bool more, std::uint32_t id = 0) {
    if (version_ == 4) {
      frag_offset_ = offset;
      more_fragments_ = more;
      ip_id_ = static_cast<std::uint16_t>(id);
      return *this;
    }
    ByteVec body{0};  // reserved
    const auto offset_flags = static_cast<std::uint16_t>((offset << 3) | (more ? 1 : 0));
    put16(body, offset_flags);
    put32(body, id);
    chain_.push_back({44, std::move(body)});
    return *this;
  }

  // --- IPv6 extension headers, in call order. `body` is what follows the Next Header and
  // length bytes; it is zero-padded (Pad1 options) to make the header a multiple of 8. ---
  PacketBuilder& hop_by_hop(ByteVec options = {}) { return extension(0, std::move(options)); }
  PacketBuilder& destination_options(ByteVec options = {}) {
    return extension(60, std::move(options));
  }
  PacketBuilder& routing(std::uint8_t type, std::uint8_t segments_left, ByteVec data = {}) {
    ByteVec body{type, segments_left};
    body.insert(body.end(), data.begin(), data.end());
    return extension(43, std::move(body));
  }
  // Authentication header (RFC 4302): its length counts 4-byte units, minus 2.
  PacketBuilder& authentication(std::uint32_t spi, std::uint32_t seq,
                                ByteVec icv = ByteVec(12, 0)) {
    ByteVec h{0, 0, 0, 0};  // next header and length, filled in at build; reserved
    put32(h, spi);
    put32(h, seq);
    h.insert(h.end(), icv.begin(), icv.end());
    while (h.size() % 8 != 0) h.push_back(0);
    h[1] = static_cast<std::uint8_t>(h.size() / 4 - 2);
    chain_.push_back({51, ByteVec(h.begin() + 1, h.end())});
    return *this;
  }
  // A generic-format extension header of any type.
  PacketBuilder& extension(std::uint8_t type, ByteVec body) {
    while ((body.size() + 2) % 8 != 0) body.push_back(0);
    ByteVec h{static_cast<std::uint8_t>((body.size() + 2) / 8 - 1)};
    h.insert(h.end(), body.begin(), body.end());
    chain_.push_back({type, std::move(h)});
    return *this;
  }
  // An extension header written verbatim after its Next Header byte (for lies: any length
  // byte, any size).
  PacketBuilder& raw_extension(std::uint8_t type, ByteVec after_next_header) {
    chain_.push_back({type, std::move(after_next_header)});
    return *this;
  }

  // --- Transport ---
  PacketBuilder& udp(std::uint16_t src_port, std::uint16_t dst_port) {
    transport_ = Transport::udp;
    protocol_ = kProtoUdp;
    sport_ = src_port;
    dport_ = dst_port;
    return *this;
  }
  PacketBuilder& tcp(std::uint16_t src_port, std::uint16_t dst_port) {
    transport_ = Transport::tcp;
    protocol_ = kProtoTcp;
    sport_ = src_port;
    dport_ = dst_port;
    return *this;
  }
  PacketBuilder& seq(std::uint32_t v) {
    seq_ = v;
    return *this;
  }
  // The acknowledgment number only; set the ACK bit with flags().
  PacketBuilder& ack(std::uint32_t v) {
    ack_ = v;
    return *this;
  }
  // All flags at once, as tcp::k* bits.
  PacketBuilder& flags(std::uint8_t v) {
    flags_ = v;
    return *this;
  }
  PacketBuilder& window(std::uint16_t v) {
    window_ = v;
    return *this;
  }
  // TCP options, zero-padded (End of Option List) to a multiple of 4 bytes.
  PacketBuilder& tcp_options(ByteVec options) {
    tcp_options_ = std::move(options);
    while (tcp_options_.size() % 4 != 0) tcp_options_.push_back(0);
    return *this;
  }
  // No transport header: the payload is carried directly under this protocol number (also
  // 17 or 6: e.g. a non-first fragment, or a cut UDP header).
  PacketBuilder& protocol(std::uint8_t p) {
    transport_ = Transport::none;
    protocol_ = p;
    return *this;
  }
  PacketBuilder& payload(std::span<const std::uint8_t> p) {
    payload_.assign(p.begin(), p.end());
    return *this;
  }
  PacketBuilder& payload(std::string_view text) {
    payload_ = bytes_of(text);
    return *this;
  }
  // Bytes after the IP datagram (Ethernet padding): not counted in any length.
  PacketBuilder& trailer(ByteVec t) {
    trailer_ = std::move(t);
    return *this;
  }

  // --- Lies, for negative tests ---
  PacketBuilder& ipv4_ihl(std::uint8_t v) {
    ihl_lie_ = v;
    return *this;
  }
  PacketBuilder& ipv4_total_length(std::uint16_t v) {
    length_lie_ = v;
    return *this;
  }
  PacketBuilder& ipv6_payload_length(std::uint16_t v) {
    length_lie_ = v;
    return *this;
  }
  PacketBuilder& version(std::uint8_t v) {
    version_lie_ = v;
    return *this;
  }
  PacketBuilder& udp_length(std::uint16_t v) {
    udp_length_lie_ = v;
    return *this;
  }
  PacketBuilder& udp_checksum(std::uint16_t v) {
    checksum_lie_ = v;
    return *this;
  }
  PacketBuilder& tcp_data_offset(std::uint8_t v) {
    data_offset_lie_ = v;
    return *this;
  }

  // The UDP or TCP segment alone (the payload alone for other protocols), with its checksum
  // for the addresses set so far.
  ByteVec build_transport() const {
    ByteVec seg;
    if (transport_ == Transport::udp) {
      put16(seg, sport_);
      put16(seg, dport_);
      put16(seg, udp_length_lie_.value_or(static_cast<std::uint16_t>(8 + payload_.size())));
      put16(seg, 0);
      seg.insert(seg.end(), payload_.begin(), payload_.end());
      fill_l4_checksum(seg, 6);
    } else if (transport_ == Transport::tcp) {
      put16(seg, sport_);
      put16(seg, dport_);
      put32(seg, seq_);
      put32(seg, ack_);
      const auto words = static_cast<std::uint8_t>(5 + tcp_options_.size() / 4);
      seg.push_back(static_cast<std::uint8_t>(data_offset_lie_.value_or(words) << 4));
      seg.push_back(flags_);
      put16(seg, window_);
      put16(seg, 0);  // checksum
      put16(seg, 0);  // urgent pointer
      seg.insert(seg.end(), tcp_options_.begin(), tcp_options_.end());
      seg.insert(seg.end(), payload_.begin(), payload_.end());
      fill_l4_checksum(seg, 16);
    } else {
      seg = payload_;
    }
    return seg;
  }

  // The whole packet: IP header(s), transport, payload, trailer.
  ByteVec build() const {
    const ByteVec l4 = build_transport();
    ByteVec out = version_ == 4 ? ipv4_header(l4.size()) : ipv6_header(l4.size());
    out.insert(out.end(), l4.begin(), l4.end());
    out.insert(out.end(), trailer_.begin(), trailer_.end());
    return out;
  }

 private:
  enum class Transport { none, udp, tcp };
  struct Extension {
    std::uint8_t type;
    ByteVec after_next_header;  // everything after the Next Header byte
  };

  static void put16(ByteVec& v, std::uint16_t x) {
    v.push_back(static_cast<std::uint8_t>(x >> 8));
    v.push_back(static_cast<std::uint8_t>(x));
  }
  static void put32(ByteVec& v, std::uint32_t x) {
    put16(v, static_cast<std::uint16_t>(x >> 16));
    put16(v, static_cast<std::uint16_t>(x));
  }

  // Writes the checksum at seg[at], over the pseudo-header (RFC 768, RFC 8200 §8.1) and seg.
  void fill_l4_checksum(ByteVec& seg, std::size_t at) const {
    std::uint32_t sum = checksum::add(0, src_);
    sum = checksum::add(sum, dst_);
    sum += protocol_;
    sum += static_cast<std::uint32_t>(seg.size() >> 16) +
           static_cast<std::uint32_t>(seg.size() & 0xffff);
    std::uint16_t c = checksum::finish(checksum::add(sum, seg));
    if (transport_ == Transport::udp && c == 0) c = 0xffff;  // 0 means "no checksum" in UDP
    if (transport_ == Transport::udp && checksum_lie_) c = *checksum_lie_;
    seg[at] = static_cast<std::uint8_t>(c >> 8);
    seg[at + 1] = static_cast<std::uint8_t>(c);
  }

  ByteVec ipv4_header(std::size_t l4_size) const {
    ByteVec h;
    const auto words = static_cast<std::uint8_t>(5 + ipv4_options_.size() / 4);
    h.push_back(static_cast<std::uint8_t>(version_lie_.value_or(4) << 4 |
                                          (ihl_lie_.value_or(words) & 0x0f)));
    h.push_back(tos_);
    put16(h, length_lie_.value_or(static_cast<std::uint16_t>(words * 4 + l4_size)));
    put16(h, ip_id_);
    put16(h, static_cast<std::uint16_t>((dont_fragment_ ? 0x4000 : 0) |
                                        (more_fragments_ ? 0x2000 : 0) | (frag_offset_ & 0x1fff)));
    h.push_back(ttl_);
    h.push_back(protocol_);
    put16(h, 0);
    h.insert(h.end(), src_.begin(), src_.end());
    h.insert(h.end(), dst_.begin(), dst_.end());
    h.insert(h.end(), ipv4_options_.begin(), ipv4_options_.end());
    const std::uint16_t c = checksum::finish(checksum::add(0, h));
    h[10] = static_cast<std::uint8_t>(c >> 8);
    h[11] = static_cast<std::uint8_t>(c);
    return h;
  }

  ByteVec ipv6_header(std::size_t l4_size) const {
    ByteVec chain;
    for (std::size_t i = 0; i < chain_.size(); ++i) {
      chain.push_back(i + 1 < chain_.size() ? chain_[i + 1].type : protocol_);
      chain.insert(chain.end(), chain_[i].after_next_header.begin(),
                   chain_[i].after_next_header.end());
    }
    ByteVec h;
    put32(h, static_cast<std::uint32_t>(version_lie_.value_or(6)) << 28 |
                 std::uint32_t{tos_} << 20 | flow_label_);
    put16(h, length_lie_.value_or(static_cast<std::uint16_t>(chain.size() + l4_size)));
    h.push_back(chain_.empty() ? protocol_ : chain_.front().type);
    h.push_back(ttl_);
    h.insert(h.end(), src_.begin(), src_.end());
    h.insert(h.end(), dst_.begin(), dst_.end());
    h.insert(h.end(), chain.begin(), chain.end());
    return h;
  }

  std::uint8_t version_ = 4;
  ByteVec src_ = ByteVec(4, 0);
  ByteVec dst_ = ByteVec(4, 0);
  std::uint8_t ttl_ = 64;
  std::uint8_t tos_ = 0;
  std::uint32_t flow_label_ = 0;
  std::uint16_t ip_id_ = 0;
  bool dont_fragment_ = false;
  bool more_fragments_ = false;
  std::uint16_t frag_offset_ = 0;
  ByteVec ipv4_options_;
  std::vector<Extension> chain_;
  Transport transport_ = Transport::none;
  std::uint8_t protocol_ = kNoNextHeader;
  std::uint16_t sport_ = 0;
  std::uint16_t dport_ = 0;
  std::uint32_t seq_ = 0;
  std::uint32_t ack_ = 0;
  std::uint8_t flags_ = 0;
  std::uint16_t window_ = 65535;
  ByteVec tcp_options_;
  ByteVec payload_;
  ByteVec trailer_;
  std::optional<std::uint8_t> ihl_lie_;
  std::optional<std::uint16_t> length_lie_;
  std::optional<std::uint8_t> version_lie_;
  std::optional<std::uint16_t> udp_length_lie_;
  std::optional<std::uint16_t> checksum_lie_;
  std::optional<std::uint8_t> data_offset_lie_;
};

}  // namespace quicstep::test
