#include "server_testbed/gate/batch_io.hpp"

#include <netinet/in.h>

#include <cstring>

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

bool SendBatch::add(int fd, std::span<const std::uint8_t> data, const sockaddr_storage& to) {
  if (data.size() > kMaxDatagram) return false;
  if (count_ == kBatch) flush(fd);
  std::uint8_t* slot = bufs_.data() + count_ * kMaxDatagram;
  std::memcpy(slot, data.data(), data.size());
  to_[count_] = to;
  iov_[count_] = {slot, data.size()};
  msgs_[count_] = {};
  msgs_[count_].msg_hdr.msg_iov = &iov_[count_];
  msgs_[count_].msg_hdr.msg_iovlen = 1;
  msgs_[count_].msg_hdr.msg_name = &to_[count_];
  msgs_[count_].msg_hdr.msg_namelen = addr_len(to);
  ++count_;
  return true;
}

std::size_t SendBatch::flush(int fd) {
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
