#include "client/kernel/lift_datagrams.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace quicstep::client::kernel {

std::vector<std::uint8_t> lift_payload(common::Bytes short_header, std::size_t size,
                                       std::mt19937_64& rng) {
  if (short_header.size() < 2 || (short_header[0] & 0x80) != 0) return {};
  const std::size_t keep = std::min({short_header.size(), kLiftHeaderBytes, size});
  std::vector<std::uint8_t> out(short_header.begin(), short_header.begin() + keep);
  out.reserve(size);
  while (out.size() < size) {
    const std::uint64_t r = rng();
    for (int i = 0; i < 8 && out.size() < size; ++i) {
      out.push_back(static_cast<std::uint8_t>(r >> (8 * i)));
    }
  }
  return out;
}

common::Outcome LiftSender::open(std::uint32_t mark) {
  std::string why;
  for (auto [family, fd] : {std::pair{AF_INET, &v4_}, std::pair{AF_INET6, &v6_}}) {
    net::UniqueFd s(::socket(family, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP));
    if (!s.valid()) {
      why = std::string("raw UDP socket: ") + std::strerror(errno);
      continue;
    }
    if (::setsockopt(s.get(), SOL_SOCKET, SO_MARK, &mark, sizeof mark) != 0) {
      why = std::string("SO_MARK: ") + std::strerror(errno);
      continue;
    }
    if (family == AF_INET6) {
      const int offset = 6;  // the UDP checksum: the kernel computes it (IPv6 requires one)
      if (::setsockopt(s.get(), IPPROTO_IPV6, IPV6_CHECKSUM, &offset, sizeof offset) != 0) {
        why = std::string("IPV6_CHECKSUM: ") + std::strerror(errno);
        continue;
      }
    }
    *fd = std::move(s);
  }
  if (!is_open()) return common::Failure(why);
  return {};
}

std::size_t LiftSender::send(const common::FlowKey& flow, common::Bytes short_header,
                             std::size_t bytes) {
  const bool v4 = flow.client.family == common::IpFamily::v4;
  const net::UniqueFd& fd = v4 ? v4_ : v6_;
  if (!fd.valid()) return 0;
  std::size_t sent = 0;
  for (std::size_t done = 0; done < bytes; done += kLiftDatagramSize) {
    std::vector<std::uint8_t> payload = lift_payload(short_header, kLiftDatagramSize, rng_);
    if (payload.empty()) return sent;
    // The UDP header; its checksum 0 for IPv4 (none), the kernel's for IPv6.
    const std::uint16_t length = static_cast<std::uint16_t>(8 + payload.size());
    std::vector<std::uint8_t> udp(8);
    const std::uint16_t fields[4] = {htons(flow.client_port), htons(flow.server_port),
                                     htons(length), 0};
    std::memcpy(udp.data(), fields, 8);
    udp.insert(udp.end(), payload.begin(), payload.end());
    iovec iov{udp.data(), udp.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(in6_pktinfo))] = {};
    sockaddr_storage to{};
    if (v4) {
      auto* a = reinterpret_cast<sockaddr_in*>(&to);
      a->sin_family = AF_INET;
      std::memcpy(&a->sin_addr, flow.server.bytes.data(), 4);
      msg.msg_namelen = sizeof(sockaddr_in);
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(in_pktinfo));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
      in_pktinfo info{};
      std::memcpy(&info.ipi_spec_dst, flow.client.bytes.data(), 4);
      std::memcpy(CMSG_DATA(c), &info, sizeof info);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&to);
      a->sin6_family = AF_INET6;
      std::memcpy(&a->sin6_addr, flow.server.bytes.data(), 16);
      msg.msg_namelen = sizeof(sockaddr_in6);
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(in6_pktinfo));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = IPPROTO_IPV6;
      c->cmsg_type = IPV6_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(in6_pktinfo));
      in6_pktinfo info{};
      std::memcpy(&info.ipi6_addr, flow.client.bytes.data(), 16);
      std::memcpy(CMSG_DATA(c), &info, sizeof info);
    }
    msg.msg_name = &to;
    if (::sendmsg(fd.get(), &msg, 0) == static_cast<ssize_t>(udp.size())) ++sent;
  }
  return sent;
}

}  // namespace quicstep::client::kernel
