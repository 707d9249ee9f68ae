#include "server_testbed/gate/batch_io.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>

#include <cstring>

#include "server_testbed/gate/ip_udp_frame.hpp"

namespace quicstep::server_testbed::gate {

namespace {
socklen_t addr_len(const sockaddr_storage& a) {
  return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}
}  // namespace

RecvBatch::RecvBatch() : bufs_(kBatch * kMaxDatagram) {}

std::size_t RecvBatch::receive(int fd) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    iov_[i] = {bufs_.data() + i * kMaxDatagram, kMaxDatagram};
    msgs_[i] = {};
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
    msgs_[i].msg_hdr.msg_name = &from_[i];
    msgs_[i].msg_hdr.msg_namelen = sizeof(from_[i]);
  }
  const int n = recvmmsg(fd, msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

std::span<const std::uint8_t> RecvBatch::data(std::size_t i) const {
  const std::size_t len = msgs_[i].msg_len < kMaxDatagram ? msgs_[i].msg_len : kMaxDatagram;
  return {bufs_.data() + i * kMaxDatagram, len};
}

SendBatch::SendBatch() : bufs_(kBatch * kMaxDatagram) {}

void SendBatch::use_raw(int raw_fd, const sockaddr_storage& local) {
  raw_fd_ = raw_fd;
  local_ = local;
}

void SendBatch::use_packet(int packet_fd, const sockaddr_storage& local,
                           const sockaddr_ll& next_hop) {
  use_raw(packet_fd, local);
  link_layer_ = true;
  next_hop_ = next_hop;
}

bool SendBatch::add(int fd, std::span<const std::uint8_t> data, const sockaddr_storage& to) {
  if (data.size() > kMaxDatagram - kIpv6UdpHeader) return false;
  if (count_ == kBatch) flush(fd);
  std::uint8_t* slot = bufs_.data() + count_ * kMaxDatagram;
  std::size_t len = data.size();
  to_[count_] = to;
  if (raw_fd_ >= 0) {
    len = write_ip_udp({slot, kMaxDatagram}, local_, to, data, ip_id_++);
    if (len == 0) return false;
    if (ip_id_ == 0) ip_id_ = 1;  // 0 would make the kernel pick one (ip_select_ident)
    // a raw socket's destination port must be 0 (IPv6: 0 or the protocol)
    if (to.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in&>(to_[count_]).sin_port = 0;
    } else {
      reinterpret_cast<sockaddr_in6&>(to_[count_]).sin6_port = 0;
    }
  } else {
    std::memcpy(slot, data.data(), len);
  }
  iov_[count_] = {slot, len};
  if (link_layer_) {
    ll_to_[count_] = next_hop_;
    ll_to_[count_].sll_protocol = htons(to.ss_family == AF_INET ? ETH_P_IP : ETH_P_IPV6);
  }
  msgs_[count_] = {};
  msgs_[count_].msg_hdr.msg_iov = &iov_[count_];
  msgs_[count_].msg_hdr.msg_iovlen = 1;
  if (link_layer_) {
    msgs_[count_].msg_hdr.msg_name = &ll_to_[count_];
    msgs_[count_].msg_hdr.msg_namelen = sizeof(sockaddr_ll);
  } else {
    msgs_[count_].msg_hdr.msg_name = &to_[count_];
    msgs_[count_].msg_hdr.msg_namelen = addr_len(to);
  }
  ++count_;
  return true;
}

std::size_t SendBatch::flush(int fd) {
  if (raw_fd_ >= 0) fd = raw_fd_;
  std::size_t sent = 0;
  while (sent < count_) {
    const int n = sendmmsg(fd, msgs_.data() + sent, static_cast<unsigned>(count_ - sent),
                           MSG_DONTWAIT);
    if (n <= 0) break;  // EAGAIN/ENOBUFS: drop the rest
    sent += static_cast<std::size_t>(n);
  }
  count_ = 0;
  return sent;
}

}  // namespace quicstep::server_testbed::gate
