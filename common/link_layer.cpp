#include "common/link_layer.hpp"

namespace quicstep::common {
namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86dd;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint16_t kEtherQinQ = 0x88a8;
constexpr int kMaxVlanTags = 2;

Result<Bytes> by_ethertype(std::uint16_t ethertype, ByteReader& r) {
  if (ethertype != kEtherIpv4 && ethertype != kEtherIpv6) return Error::unsupported;
  if (r.empty()) return Error::truncated;
  return r.rest();
}

Result<Bytes> ethernet(Bytes frame) {
  ByteReader r(frame);
  if (auto s = r.skip(12); !s) return s.error();  // destination and source MAC
  auto type = r.u16();
  for (int tags = 0; type && (*type == kEtherVlan || *type == kEtherQinQ); ++tags) {
    if (tags == kMaxVlanTags) return Error::unsupported;
    if (auto s = r.skip(2); !s) return s.error();  // TCI
    type = r.u16();
  }
  if (!type) return type.error();
  return by_ethertype(*type, r);
}

Result<Bytes> linux_sll(Bytes frame) {
  // packet type (2), ARPHRD (2), address length (2), address (8), protocol (2)
  ByteReader r(frame);
  if (auto s = r.skip(14); !s) return s.error();
  auto type = r.u16();
  if (!type) return type.error();
  return by_ethertype(*type, r);
}

Result<Bytes> linux_sll2(Bytes frame) {
  // protocol (2), reserved (2), ifindex (4), ARPHRD (2), packet type (1), addr len (1), addr (8)
  ByteReader r(frame);
  auto type = r.u16();
  if (!type) return type.error();
  if (auto s = r.skip(18); !s) return s.error();
  return by_ethertype(*type, r);
}

Result<Bytes> null_loopback(Bytes frame) {
  // The family is in the capturing host's byte order: accept either order.
  ByteReader r(frame);
  auto family = r.u32();
  if (!family) return family.error();
  const std::uint32_t f = *family;
  const std::uint32_t swapped = ((f & 0xff) << 24) | ((f & 0xff00) << 8) | ((f >> 8) & 0xff00) | (f >> 24);
  auto is_ip = [](std::uint32_t v) { return v == 2 || v == 10 || v == 24 || v == 28 || v == 30; };
  if (!is_ip(f) && !is_ip(swapped)) return Error::unsupported;
  if (r.empty()) return Error::truncated;
  return r.rest();
}

}  // namespace

Result<Bytes> ip_datagram_of_frame(LinkType link_type, Bytes frame) {
  switch (link_type) {
    case LinkType::ethernet: return ethernet(frame);
    case LinkType::linux_sll: return linux_sll(frame);
    case LinkType::linux_sll2: return linux_sll2(frame);
    case LinkType::null_loopback: return null_loopback(frame);
    case LinkType::raw:
    case LinkType::raw_alt:
    case LinkType::ipv4:
    case LinkType::ipv6:
      if (frame.empty()) return Error::truncated;
      return frame;
  }
  return Error::unsupported;
}

}  // namespace quicstep::common
