// Batched UDP I/O for quicstep-gate: recvmmsg into a fixed set of buffers, and Retry replies
// collected and sent with one sendmmsg — one system call per batch instead of per datagram,
// which is most of a Retry's cost once the crypto is cheap. Not thread-safe; one per loop.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace quicstep::server_testbed::gate {

constexpr std::size_t kBatch = 64;
constexpr std::size_t kMaxDatagram = 2048;  // client Initials are 1200..1472 octets

class RecvBatch {
 public:
  RecvBatch();
  // Receives up to kBatch datagrams without blocking; returns how many (0 when none).
  // Datagrams longer than kMaxDatagram are truncated (MSG_TRUNC): not Initials we accept.
  std::size_t receive(int fd);
  std::span<const std::uint8_t> data(std::size_t i) const;
  const sockaddr_storage& from(std::size_t i) const { return from_[i]; }

 private:
  std::vector<std::uint8_t> bufs_;
  std::array<sockaddr_storage, kBatch> from_{};
  std::array<iovec, kBatch> iov_{};
  std::array<mmsghdr, kBatch> msgs_{};
};

class SendBatch {
 public:
  SendBatch();
  // Copies the datagram in; flushes first when the batch is full. false when too long.
  bool add(int fd, std::span<const std::uint8_t> data, const sockaddr_storage& to);
  // Sends what was added; returns how many the kernel took (the rest are dropped: Retries
  // are not retransmitted, the client resends its Initial).
  std::size_t flush(int fd);

 private:
  std::vector<std::uint8_t> bufs_;
  std::array<sockaddr_storage, kBatch> to_{};
  std::array<iovec, kBatch> iov_{};
  std::array<mmsghdr, kBatch> msgs_{};
  std::size_t count_ = 0;
};

}  // namespace quicstep::server_testbed::gate
