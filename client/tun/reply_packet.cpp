#include "client/tun/reply_packet.hpp"

#include <cstring>

#include "common/ip_packet.hpp"
#include "common/ipv4.hpp"

namespace quicstep::client::tun {
namespace {

constexpr std::uint8_t kHopLimit = 64;

void put16(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

// The ones'-complement sum of the UDP pseudo-header (RFC 768; RFC 8200 §8.1), unfolded:
// internet_checksum folds it.
std::uint32_t pseudo_header_sum(const common::IpAddress& src, const common::IpAddress& dst,
                                std::size_t udp_length) {
  std::uint32_t sum = 0;
  auto add = [&sum](common::Bytes octets) {
    for (std::size_t i = 0; i + 1 < octets.size(); i += 2) {
      sum += static_cast<std::uint32_t>(octets[i] << 8 | octets[i + 1]);
    }
  };
  add(src.octets());
  add(dst.octets());
  sum += common::kIpProtoUdp;
  sum += static_cast<std::uint32_t>(udp_length & 0xffff);
  sum += static_cast<std::uint32_t>(udp_length >> 16);
  return sum;
}

// The UDP header at `udp` (its payload already after it), checksum included (or its partial
// form: the pseudo-header sum, folded).
void write_udp(const common::FlowKey& flow, std::uint8_t* udp, std::size_t udp_length,
               ReplyChecksum checksum) {
  put16(udp, flow.server_port);
  put16(udp + 2, flow.client_port);
  put16(udp + 4, udp_length <= 0xffff ? udp_length : 0);  // IPv6 jumbograms aside
  put16(udp + 6, 0);
  const std::uint32_t initial = pseudo_header_sum(flow.server, flow.client, udp_length);
  if (checksum == ReplyChecksum::partial) {
    // internet_checksum of nothing is the complemented fold of `initial`.
    put16(udp + 6, static_cast<std::uint16_t>(~common::internet_checksum({}, initial)));
    return;
  }
  std::uint16_t sum = common::internet_checksum(common::Bytes(udp, udp_length), initial);
  if (sum == 0) sum = 0xffff;  // 0 means "no checksum" (IPv4) or is forbidden (IPv6)
  put16(udp + 6, sum);
}

}  // namespace

std::size_t write_reply_packet(const common::FlowKey& flow, common::Bytes payload,
                               std::span<std::uint8_t> out, ReplyChecksum checksum) {
  const bool v4 = flow.client.family == common::IpFamily::v4;
  if (flow.server.family != flow.client.family) return 0;
  const std::size_t headers = v4 ? kIpv4UdpHeaders : kIpv6UdpHeaders;
  const std::size_t udp_length = 8 + payload.size();
  const std::size_t total = headers + payload.size();
  if (total > out.size() || (v4 ? total : udp_length) > 0xffff) return 0;

  std::uint8_t* p = out.data();
  std::uint8_t* udp = p + headers - 8;
  if (!payload.empty()) std::memcpy(udp + 8, payload.data(), payload.size());
  if (v4) {
    p[0] = 0x45;  // version 4, IHL 5
    p[1] = 0;
    put16(p + 2, total);
    put16(p + 4, 0);       // identification: unused with DF
    put16(p + 6, 0x4000);  // DF
    p[8] = kHopLimit;
    p[9] = common::kIpProtoUdp;
    put16(p + 10, 0);
    std::memcpy(p + 12, flow.server.bytes.data(), 4);
    std::memcpy(p + 16, flow.client.bytes.data(), 4);
    put16(p + 10, common::internet_checksum(common::Bytes(p, 20)));
  } else {
    p[0] = 0x60;  // version 6, traffic class 0, flow label 0
    p[1] = p[2] = p[3] = 0;
    put16(p + 4, udp_length);
    p[6] = common::kIpProtoUdp;
    p[7] = kHopLimit;
    std::memcpy(p + 8, flow.server.bytes.data(), 16);
    std::memcpy(p + 24, flow.client.bytes.data(), 16);
  }
  write_udp(flow, udp, udp_length, checksum);
  return total;
}

}  // namespace quicstep::client::tun
