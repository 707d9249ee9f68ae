#include "server_testbed/gate/ip_udp_frame.hpp"

#include <netinet/in.h>

#include <cstring>

namespace quicstep::server_testbed::gate {

namespace {

std::uint32_t sum16(const std::uint8_t* p, std::size_t n, std::uint32_t sum) {
  for (; n >= 2; p += 2, n -= 2) sum += static_cast<std::uint32_t>(p[0] << 8 | p[1]);
  if (n) sum += static_cast<std::uint32_t>(p[0] << 8);
  return sum;
}

std::uint16_t fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

}  // namespace

std::size_t write_ip_udp(std::span<std::uint8_t> out, const sockaddr_storage& from,
                         const sockaddr_storage& to, std::span<const std::uint8_t> payload,
                         std::uint16_t ip_id) {
  if (from.ss_family != to.ss_family) return 0;
  const bool v4 = from.ss_family == AF_INET;
  if (!v4 && from.ss_family != AF_INET6) return 0;
  const std::size_t ip_len = v4 ? 20 : 40;
  const std::size_t udp_len = 8 + payload.size();
  if (udp_len > 0xffff || out.size() < ip_len + udp_len) return 0;

  const std::uint8_t *src, *dst;
  std::size_t addr_len;
  std::uint16_t sport, dport;  // network order, as in the sockaddr
  if (v4) {
    const auto& f = reinterpret_cast<const sockaddr_in&>(from);
    const auto& t = reinterpret_cast<const sockaddr_in&>(to);
    src = reinterpret_cast<const std::uint8_t*>(&f.sin_addr);
    dst = reinterpret_cast<const std::uint8_t*>(&t.sin_addr);
    addr_len = 4;
    sport = f.sin_port;
    dport = t.sin_port;
  } else {
    const auto& f = reinterpret_cast<const sockaddr_in6&>(from);
    const auto& t = reinterpret_cast<const sockaddr_in6&>(to);
    src = f.sin6_addr.s6_addr;
    dst = t.sin6_addr.s6_addr;
    addr_len = 16;
    sport = f.sin6_port;
    dport = t.sin6_port;
  }

  std::uint8_t* ip = out.data();
  if (v4) {
    ip[0] = 0x45;
    ip[1] = 0;
    put16(ip + 2, static_cast<std::uint16_t>(20 + udp_len));
    put16(ip + 4, ip_id);
    put16(ip + 6, 0x4000);  // DF
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    put16(ip + 10, 0);
    std::memcpy(ip + 12, src, 4);
    std::memcpy(ip + 16, dst, 4);
    put16(ip + 10, fold(sum16(ip, 20, 0)));
  } else {
    put16(ip, 0x6000);
    put16(ip + 2, 0);
    put16(ip + 4, static_cast<std::uint16_t>(udp_len));
    ip[6] = IPPROTO_UDP;
    ip[7] = 64;
    std::memcpy(ip + 8, src, 16);
    std::memcpy(ip + 24, dst, 16);
  }
  std::uint8_t* udp = ip + ip_len;
  std::memcpy(udp, &sport, 2);
  std::memcpy(udp + 2, &dport, 2);
  put16(udp + 4, static_cast<std::uint16_t>(udp_len));
  put16(udp + 6, 0);
  if (!payload.empty()) std::memcpy(udp + 8, payload.data(), payload.size());

  std::uint32_t pseudo = sum16(src, addr_len, 0);
  pseudo = sum16(dst, addr_len, pseudo);
  pseudo += IPPROTO_UDP;
  pseudo += static_cast<std::uint32_t>(udp_len);
  std::uint16_t check = fold(sum16(udp, udp_len, pseudo));
  if (check == 0) check = 0xffff;  // RFC 768: 0 means "no checksum"
  put16(udp + 6, check);
  return ip_len + udp_len;
}

}  // namespace quicstep::server_testbed::gate
