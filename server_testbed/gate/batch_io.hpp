// Batched UDP I/O for quicstep-gate: recvmmsg into a fixed set of buffers, and Retry replies
// collected and sent with one sendmmsg — one system call per batch instead of per datagram,
// which is most of a Retry's cost once the crypto is cheap. Not thread-safe; one per loop.
#pragma once

#include <linux/if_packet.h>
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
  // Raw transmission (quicstep-gate --tx raw): from now on add() writes the IP + UDP header
  // itself (gate/ip_udp_frame, source = `local`, an address and port of one family) and
  // flush() sends on `raw_fd` (an IPPROTO_RAW socket of that family) instead of the fd it is
  // given: the kernel's UDP socket layer is skipped; routing and netfilter still apply.
  void use_raw(int raw_fd, const sockaddr_storage& local);
  // Link-layer transmission (quicstep-gate --tx packet): as use_raw, but flush() sends on
  // `packet_fd` (an AF_PACKET SOCK_DGRAM socket, ideally with PACKET_QDISC_BYPASS) to
  // `next_hop` (interface index and the next hop's MAC address; the protocol is set per
  // Retry): no routing, no netfilter, no IP output path — the way a DPU's port sends.
  void use_packet(int packet_fd, const sockaddr_storage& local, const sockaddr_ll& next_hop);
  // Copies the datagram in; flushes first when the batch is full. false when too long (or,
  // raw, of the other family than `local`).
  bool add(int fd, std::span<const std::uint8_t> data, const sockaddr_storage& to);
  // Sends what was added; returns how many the kernel took (the rest are dropped: Retries
  // are not retransmitted, the client resends its Initial).
  std::size_t flush(int fd);

 private:
  int raw_fd_ = -1;
  bool link_layer_ = false;
  std::array<sockaddr_ll, kBatch> ll_to_{};
  sockaddr_ll next_hop_{};
  sockaddr_storage local_{};
  std::uint16_t ip_id_ = 1;
  std::vector<std::uint8_t> bufs_;
  std::array<sockaddr_storage, kBatch> to_{};
  std::array<iovec, kBatch> iov_{};
  std::array<mmsghdr, kBatch> msgs_{};
  std::size_t count_ = 0;
};

}  // namespace quicstep::server_testbed::gate
