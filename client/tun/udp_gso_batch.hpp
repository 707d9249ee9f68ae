// UdpGsoBatch: consecutive reply packets of one flow joined into one write to the TUN, as
// a UDP GSO super-packet behind a virtio_net_hdr (docs/DESIGN.md "The TUN engine"). What a
// relay reads in one drain is usually a run of equal-sized datagrams from one server to one
// application socket; written one by one, each costs a write() and a pass through the
// kernel's IP receive path (routing, netfilter). As one GSO packet (IFF_VNET_HDR, gso_type
// VIRTIO_NET_HDR_GSO_UDP_L4, Linux 6.2+) they cost one write and one pass, and the kernel
// cuts them back into the same datagrams just before the application's socket — which sees
// exactly what it would have seen, datagram for datagram, in order.
//
// What must hold (tests/unit/tun/udp_gso_batch_test.cpp):
//   - only packets that the kernel's segmentation reproduces exactly are joined: same
//     addresses, ports, TOS or traffic class and flow label, TTL or hop limit, IPv4
//     identification and flags; no IPv4
//     options or fragments, no IPv6 extension headers; every segment but the last exactly
//     the first's payload size, the last no larger; at most kMaxSegments; lengths in range;
//   - every write carries the partial checksum the kernel expects (CHECKSUM_PARTIAL: the
//     folded pseudo-header sum over the whole UDP length, csum_start at the UDP header,
//     csum_offset 6, VIRTIO_NET_HDR_F_NEEDS_CSUM), whatever checksum the packets were added
//     with (complete, or ReplyChecksum::partial's): a batch of one is the packet with that
//     field and header; a super-packet also has correct IPv4 total length and header
//     checksum, or IPv6 payload length;
//   - segment(i) rebuilds datagram i as the complete packet it was (for a kernel that
//     refuses GSO: the batch is then written packet by packet, nothing lost).
// Sans-IO: no syscalls, no allocation after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/byte_reader.hpp"

namespace quicstep::client::tun {

// struct virtio_net_hdr, as the TUN reads and writes it before each packet (IFF_VNET_HDR,
// the default TUNSETVNETHDRSZ): native byte order on a little-endian host. Spelled out here
// because linux/virtio_net.h does not compile as C++ (a member named `class`), and Debian
// bookworm's copy (Linux 6.1) predates VIRTIO_NET_HDR_GSO_UDP_L4.
struct VirtioNetHdr {
  std::uint8_t flags = 0;
  std::uint8_t gso_type = 0;
  std::uint16_t hdr_len = 0;
  std::uint16_t gso_size = 0;
  std::uint16_t csum_start = 0;
  std::uint16_t csum_offset = 0;
};
inline constexpr std::size_t kVirtioNetHdrLength = 10;
static_assert(sizeof(VirtioNetHdr) == kVirtioNetHdrLength);
inline constexpr std::uint8_t kVirtioNeedsCsum = 1;   // VIRTIO_NET_HDR_F_NEEDS_CSUM
inline constexpr std::uint8_t kVirtioGsoNone = 0;     // VIRTIO_NET_HDR_GSO_NONE
inline constexpr std::uint8_t kVirtioGsoUdpL4 = 5;    // VIRTIO_NET_HDR_GSO_UDP_L4 (Linux 6.2)

class UdpGsoBatch {
 public:
  // The kernel's own limit on segments per UDP GSO packet (UDP_MAX_SEGMENTS is 64 on the
  // oldest kernels with VIRTIO_NET_HDR_GSO_UDP_L4).
  static constexpr std::size_t kMaxSegments = 64;

  UdpGsoBatch();

  // Appends `packet` (one complete IPv4 or IPv6 UDP packet) when it continues the batch, or
  // starts the batch when it is empty. False when it cannot be joined (other flow or
  // headers, larger than the first, after a smaller one, too many, too long) or is not a
  // plain UDP packet: the caller writes what the batch holds, clears it and adds again —
  // and a packet refused by an empty batch is written on its own.
  bool add(common::Bytes packet);

  bool empty() const { return segments_ == 0; }
  std::size_t segments() const { return segments_; }

  // The batch as one TUN write: the virtio header followed by the packet (a batch of one)
  // or the super-packet, with the partial checksum. Valid until the next add() or clear(). Precondition: !empty().
  std::span<const std::uint8_t> write_form();

  // Datagram `i` (< segments()) as the complete packet it was added as, with a full UDP
  // checksum, preceded by a zero virtio header; written into `out` (at least
  // kVirtioNetHdrLength + 65535 + 40 bytes). Returns the length, 0 when `out` is too small.
  std::size_t segment(std::size_t i, std::span<std::uint8_t> out) const;

  void clear();

 private:
  std::vector<std::uint8_t> buffer_;  // virtio header, then the first packet's headers
                                      // and every payload in order
  std::size_t headers_ = 0;           // IP + UDP header length (28 or 48)
  std::size_t length_ = 0;            // bytes after the virtio header
  std::size_t segment_size_ = 0;      // the first datagram's payload size
  std::size_t segments_ = 0;
  bool closed_ = false;               // a smaller datagram ended the batch
  bool finished_ = false;             // write_form() rewrote the headers
};

}  // namespace quicstep::client::tun
