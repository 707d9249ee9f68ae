#include "client/tun/channel_dns.hpp"

#include <algorithm>

namespace quicstep::client::tun {
namespace {

using common::IpAddress;
using common::IpFamily;

constexpr std::uint8_t kTcp = 6;
constexpr std::uint8_t kUdp = 17;
constexpr std::uint8_t kIpv6Fragment = 44;
constexpr std::uint16_t kDnsPort = 53;

std::uint16_t word(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] << 8 | b[at + 1]);
}

void put_word(std::span<std::uint8_t> b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<std::uint8_t>(v >> 8);
  b[at + 1] = static_cast<std::uint8_t>(v);
}

// RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), over the 16-bit words of an address.
std::uint16_t adjusted(std::uint16_t check, std::span<const std::uint8_t> from,
                       std::span<const std::uint8_t> to) {
  std::uint32_t sum = static_cast<std::uint16_t>(~check);
  for (std::size_t i = 0; i + 1 < from.size(); i += 2) {
    sum += static_cast<std::uint16_t>(~word(from, i));
    sum += word(to, i);
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

// Where the address field starts (source or destination).
std::size_t address_at(IpFamily f, bool source) {
  if (f == IpFamily::v4) return source ? 12 : 16;
  return source ? 8 : 24;
}

// Writes `to` over the address at `at` (the family's length), adjusting the IPv4 header
// checksum and, with `l4_check` (the checksum field's offset), the UDP or TCP checksum.
void rewrite(std::span<std::uint8_t> p, IpFamily f, std::size_t at, const IpAddress& to,
             std::optional<std::size_t> l4_check, bool udp) {
  const std::size_t n = f == IpFamily::v4 ? 4 : 16;
  const std::span<const std::uint8_t> old_bytes(p.data() + at, n);
  std::array<std::uint8_t, 16> before{};
  std::copy(old_bytes.begin(), old_bytes.end(), before.begin());
  const std::span<const std::uint8_t> from(before.data(), n);
  const std::span<const std::uint8_t> into(to.bytes.data(), n);
  if (f == IpFamily::v4) put_word(p, 10, adjusted(word(p, 10), from, into));
  if (l4_check && *l4_check + 2 <= p.size()) {
    const std::uint16_t check = word(p, *l4_check);
    if (!(udp && f == IpFamily::v4 && check == 0)) {  // IPv4 UDP without a checksum
      std::uint16_t next = adjusted(check, from, into);
      if (udp && next == 0) next = 0xffff;
      put_word(p, *l4_check, next);
    }
  }
  std::copy(into.begin(), into.end(), p.begin() + static_cast<std::ptrdiff_t>(at));
}

std::uint64_t port_key(IpFamily f, std::uint16_t port) {
  return (f == IpFamily::v6 ? 1ull << 16 : 0) | port;
}

// The fragment identification: IPv4's, or an IPv6 fragment header's right after the fixed
// header (none elsewhere).
std::optional<std::uint64_t> fragment_key(std::span<const std::uint8_t> p, IpFamily f) {
  if (f == IpFamily::v4) return word(p, 4);
  if (p.size() < 48 || p[6] != kIpv6Fragment) return std::nullopt;
  return 1ull << 32 | std::uint64_t{word(p, 44)} << 16 | word(p, 46);
}

// Whether a packet that is no first fragment's follows one: IPv4's offset, an IPv6 fragment
// header right after the fixed header.
bool later_fragment(common::Bytes p, IpFamily f) {
  if (f == IpFamily::v4) return p.size() >= 20 && (word(p, 6) & 0x1fff) != 0;
  return p.size() >= 48 && p[6] == kIpv6Fragment && (word(p, 42) & 0xfff8) != 0;
}

// The source port of a first fragment or whole packet: UDP or TCP from port 53.
bool from_dns_port(common::Bytes p, IpFamily f) {
  if (f == IpFamily::v4) {
    const std::size_t l4 = std::size_t{p[0] & 0x0fu} * 4;
    return (p[9] == kUdp || p[9] == kTcp) && p.size() >= l4 + 2 && word(p, l4) == kDnsPort;
  }
  std::size_t l4 = 40;
  std::uint8_t next = p[6];
  if (next == kIpv6Fragment && p.size() >= 48) {
    next = p[40];
    l4 = 48;
  }
  return (next == kUdp || next == kTcp) && p.size() >= l4 + 2 && word(p, l4) == kDnsPort;
}

bool same_address(common::Bytes p, IpFamily f, std::size_t at, const IpAddress& a) {
  const std::size_t n = f == IpFamily::v4 ? 4 : 16;
  return p.size() >= at + n && std::equal(a.bytes.begin(), a.bytes.begin() + n, p.begin() + at);
}

}  // namespace

ChannelDns::ChannelDns(std::optional<IpAddress> v4, std::optional<IpAddress> v6,
                       std::size_t capacity, std::uint64_t seed, TunnelAddresses tunnel)
    : v4_(v4),
      v6_(v6),
      tunnel_(tunnel),
      ports_(capacity, Hash{seed}),
      fragments_(capacity, Hash{~seed}) {}

void ChannelDns::remember(Table& table, std::uint64_t key, const Kept& kept) {
  Table::Handle h = table.find(key);
  if (h == Table::npos) {
    if (table.full()) table.erase(table.oldest());
    h = table.insert(key);
  }
  table.value(h) = kept;
  table.touch(h);
}

bool ChannelDns::may_rewrite_to_channel(common::Bytes p) const {
  if (p.empty()) return false;
  if (p[0] >> 4 == 4 && (v4_ || tunnel_.v4) && p.size() >= 20) {
    const std::size_t l4 = std::size_t{p[0] & 0x0fu} * 4;
    return (p[9] == kUdp || p[9] == kTcp) && p.size() >= l4 + 4 && word(p, l4 + 2) == kDnsPort;
  }
  if (p[0] >> 4 == 6 && (v6_ || tunnel_.v6) && p.size() >= 44) {
    return (p[6] == kUdp || p[6] == kTcp) && word(p, 42) == kDnsPort;
  }
  return false;
}

bool ChannelDns::may_rewrite_from_channel(common::Bytes p) const {
  if (p.empty()) return false;
  if (p[0] >> 4 == 4 && p.size() >= 20) {
    if (v4_ && same_address(p, IpFamily::v4, 12, *v4_)) return true;
    return tunnel_.v4 && (from_dns_port(p, IpFamily::v4) || later_fragment(p, IpFamily::v4));
  }
  if (p[0] >> 4 == 6 && p.size() >= 40) {
    if (v6_ && same_address(p, IpFamily::v6, 8, *v6_)) return true;
    return tunnel_.v6 && (from_dns_port(p, IpFamily::v6) || later_fragment(p, IpFamily::v6));
  }
  return false;
}

bool ChannelDns::to_channel(std::span<std::uint8_t> p) {
  if (!may_rewrite_to_channel(p)) return false;
  const auto parsed = common::parse_ip_packet(p);
  if (!parsed) return false;
  const common::IpPacket& ip = *parsed;
  if (ip.is_fragment || (!ip.udp && !ip.tcp) || ip.dst_port != kDnsPort) return false;
  const std::optional<IpAddress>& to = resolver(ip.family);
  const std::optional<IpAddress>& from = tunnel(ip.family);
  Kept kept;
  if (to && ip.dst != *to) kept.asked = ip.dst;
  if (from && ip.src != *from) kept.source = ip.src;
  // Every query refreshes its port's entry, also one with nothing to rename, so that an
  // earlier query's entry never renames a later one's answer.
  remember(ports_, port_key(ip.family, ip.src_port), kept);
  const std::size_t l4_check =
      static_cast<std::size_t>(ip.ip_payload.data() - p.data()) + (ip.udp ? 6 : 16);
  if (kept.asked) {
    rewrite(p, ip.family, address_at(ip.family, false), *to, l4_check, ip.udp.has_value());
    ++redirected_;
  }
  if (kept.source) {
    rewrite(p, ip.family, address_at(ip.family, true), *from, l4_check, ip.udp.has_value());
    ++sources_renamed_;
  }
  return kept.asked || kept.source;
}

bool ChannelDns::rename_answer(std::span<std::uint8_t> p, const common::IpPacket& ip,
                               const Kept& kept, std::optional<std::size_t> l4_check) {
  const std::optional<IpAddress>& r = resolver(ip.family);
  const std::optional<IpAddress>& t = tunnel(ip.family);
  bool renamed = false;
  // Only the resolver's answers take the address asked; only those to the tunnel's address
  // go back to the query's own source.
  if (kept.asked && r && ip.src == *r) {
    rewrite(p, ip.family, address_at(ip.family, true), *kept.asked, l4_check,
            ip.udp.has_value());
    renamed = true;
  }
  if (kept.source && t && ip.dst == *t) {
    rewrite(p, ip.family, address_at(ip.family, false), *kept.source, l4_check,
            ip.udp.has_value());
    renamed = true;
  }
  return renamed;
}

bool ChannelDns::from_channel(std::span<std::uint8_t> p) {
  if (!may_rewrite_from_channel(p)) return false;
  const auto parsed = common::parse_ip_packet(p);
  if (!parsed) return false;
  const common::IpPacket& ip = *parsed;
  if (!ip.has_l4_header) {  // a later fragment: as its first fragment
    const auto key = fragment_key(p, ip.family);
    const Table::Handle h = key ? fragments_.find(*key) : Table::npos;
    if (h == Table::npos || fragments_.value(h).from != ip.src) return false;
    return rename_answer(p, ip, fragments_.value(h), std::nullopt);
  }
  if ((!ip.udp && !ip.tcp) || ip.src_port != kDnsPort) return false;
  const Table::Handle h = ports_.find(port_key(ip.family, ip.dst_port));
  if (h == Table::npos) {
    if (resolver(ip.family) && ip.src == *resolver(ip.family)) ++unmatched_;
    return false;
  }
  const Kept kept = ports_.value(h);
  const std::size_t l4 = static_cast<std::size_t>(ip.ip_payload.data() - p.data());
  const bool asked = kept.asked && resolver(ip.family) && ip.src == *resolver(ip.family);
  const bool source = kept.source && tunnel(ip.family) && ip.dst == *tunnel(ip.family);
  if (!rename_answer(p, ip, kept, l4 + (ip.udp ? 6 : 16))) return false;
  if (ip.is_fragment) {
    if (const auto key = fragment_key(p, ip.family)) {
      Kept first = kept;
      first.from = ip.src;
      remember(fragments_, *key, first);
    }
  }
  if (asked) ++answered_;
  if (source) ++answers_to_source_;
  return true;
}

}  // namespace quicstep::client::tun
