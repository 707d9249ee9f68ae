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

bool same_address(common::Bytes p, IpFamily f, std::size_t at, const IpAddress& a) {
  const std::size_t n = f == IpFamily::v4 ? 4 : 16;
  return p.size() >= at + n && std::equal(a.bytes.begin(), a.bytes.begin() + n, p.begin() + at);
}

}  // namespace

ChannelDns::ChannelDns(std::optional<IpAddress> v4, std::optional<IpAddress> v6,
                       std::size_t capacity, std::uint64_t seed)
    : v4_(v4), v6_(v6), ports_(capacity, Hash{seed}), fragments_(capacity, Hash{~seed}) {}

void ChannelDns::remember(Table& table, std::uint64_t key, const IpAddress& address) {
  Table::Handle h = table.find(key);
  if (h == Table::npos) {
    if (table.full()) table.erase(table.oldest());
    h = table.insert(key);
  }
  table.value(h) = address;
  table.touch(h);
}

bool ChannelDns::may_rewrite_to_channel(common::Bytes p) const {
  if (p.empty()) return false;
  if (p[0] >> 4 == 4 && v4_ && p.size() >= 20) {
    const std::size_t l4 = std::size_t{p[0] & 0x0fu} * 4;
    return (p[9] == kUdp || p[9] == kTcp) && p.size() >= l4 + 4 && word(p, l4 + 2) == kDnsPort;
  }
  if (p[0] >> 4 == 6 && v6_ && p.size() >= 44) {
    return (p[6] == kUdp || p[6] == kTcp) && word(p, 42) == kDnsPort;
  }
  return false;
}

bool ChannelDns::may_rewrite_from_channel(common::Bytes p) const {
  if (p.empty()) return false;
  if (p[0] >> 4 == 4 && v4_) return same_address(p, IpFamily::v4, 12, *v4_);
  if (p[0] >> 4 == 6 && v6_) return same_address(p, IpFamily::v6, 8, *v6_);
  return false;
}

bool ChannelDns::to_channel(std::span<std::uint8_t> p) {
  if (!may_rewrite_to_channel(p)) return false;
  const auto parsed = common::parse_ip_packet(p);
  if (!parsed) return false;
  const common::IpPacket& ip = *parsed;
  if (ip.is_fragment || (!ip.udp && !ip.tcp) || ip.dst_port != kDnsPort) return false;
  const IpAddress& to = *resolver(ip.family);
  remember(ports_, port_key(ip.family, ip.src_port), ip.dst);
  if (ip.dst == to) return false;
  const std::size_t l4 = static_cast<std::size_t>(ip.ip_payload.data() - p.data());
  rewrite(p, ip.family, address_at(ip.family, false), to, l4 + (ip.udp ? 6 : 16),
          ip.udp.has_value());
  ++redirected_;
  return true;
}

bool ChannelDns::from_channel(std::span<std::uint8_t> p) {
  if (!may_rewrite_from_channel(p)) return false;
  const auto parsed = common::parse_ip_packet(p);
  if (!parsed) return false;
  const common::IpPacket& ip = *parsed;
  const std::size_t source = address_at(ip.family, true);
  if (!ip.has_l4_header) {  // a later fragment: as its first fragment
    const auto key = fragment_key(p, ip.family);
    const Table::Handle h = key ? fragments_.find(*key) : Table::npos;
    if (h == Table::npos) return false;
    rewrite(p, ip.family, source, fragments_.value(h), std::nullopt, false);
    return true;
  }
  if ((!ip.udp && !ip.tcp) || ip.src_port != kDnsPort) return false;
  const Table::Handle h = ports_.find(port_key(ip.family, ip.dst_port));
  if (h == Table::npos) {
    ++unmatched_;
    return false;
  }
  const IpAddress asked = ports_.value(h);
  if (asked == ip.src) return false;
  if (ip.is_fragment) {
    if (const auto key = fragment_key(p, ip.family)) remember(fragments_, *key, asked);
  }
  const std::size_t l4 = static_cast<std::size_t>(ip.ip_payload.data() - p.data());
  rewrite(p, ip.family, source, asked, l4 + (ip.udp ? 6 : 16), ip.udp.has_value());
  ++answered_;
  return true;
}

}  // namespace quicstep::client::tun
