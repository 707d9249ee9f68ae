#include "client/tun/udp_gso_batch.hpp"

#include <cstring>

#include "common/ip_packet.hpp"
#include "common/ipv4.hpp"

namespace quicstep::client::tun {
namespace {

constexpr std::size_t kUdpHeader = 8;
constexpr std::size_t kMaxIpLength = 65535;

std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
void put16(std::uint8_t* p, std::size_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

// The IP + UDP header length of a plain UDP packet (IPv4 without options, not a fragment;
// IPv6 with UDP as its next header), whose length fields agree with its size; 0 otherwise.
std::size_t udp_headers(common::Bytes p) {
  if (p.size() < 1) return 0;
  if (p[0] == 0x45) {
    if (p.size() < 28 || p[9] != common::kIpProtoUdp || get16(&p[2]) != p.size()) return 0;
    if ((get16(&p[6]) & 0x3fff) != 0) return 0;  // MF or an offset: a fragment
    if (get16(&p[24]) != p.size() - 20) return 0;
    return 28;
  }
  if ((p[0] >> 4) == 6) {
    if (p.size() < 48 || p[6] != common::kIpProtoUdp || get16(&p[4]) != p.size() - 40) return 0;
    if (get16(&p[44]) != p.size() - 40) return 0;
    return 48;
  }
  return 0;
}

// Whether two plain UDP packets' headers agree in everything but the lengths and
// checksums: what the kernel copies from the super-packet's headers into each segment.
// (It numbers the IPv4 identification upwards from the first's; with DF set, as on every
// reply, the identification means nothing, RFC 6864. Equal ones are required so that
// segment(i) gives back exactly what was added.)
bool same_headers(const std::uint8_t* a, const std::uint8_t* b, std::size_t headers) {
  if (headers == 28) {
    return std::memcmp(a, b, 2) == 0 && std::memcmp(a + 4, b + 4, 6) == 0 &&
           std::memcmp(a + 12, b + 12, 8) == 0 && std::memcmp(a + 20, b + 20, 4) == 0;
  }
  return std::memcmp(a, b, 4) == 0 && std::memcmp(a + 6, b + 6, 34) == 0 &&
         std::memcmp(a + 40, b + 40, 4) == 0;
}

// The UDP pseudo-header sum (RFC 768; RFC 8200 §8.1) over `udp_length`, unfolded.
std::uint32_t pseudo_header_sum(const std::uint8_t* ip, std::size_t headers,
                                std::size_t udp_length) {
  const bool v4 = headers == 28;
  const std::uint8_t* addresses = ip + (v4 ? 12 : 8);
  const std::size_t n = v4 ? 8 : 32;
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < n; i += 2) sum += get16(addresses + i);
  return sum + common::kIpProtoUdp + static_cast<std::uint32_t>(udp_length);
}

std::uint16_t fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

// Sets the length fields (and the IPv4 header checksum) of the headers at `ip` for a UDP
// payload of `payload` bytes.
void set_lengths(std::uint8_t* ip, std::size_t headers, std::size_t payload) {
  const std::size_t udp_length = kUdpHeader + payload;
  if (headers == 28) {
    put16(ip + 2, headers + payload);
    put16(ip + 10, 0);
    put16(ip + 10, common::internet_checksum(common::Bytes(ip, 20)));
  } else {
    put16(ip + 4, udp_length);
  }
  put16(ip + headers - kUdpHeader + 4, udp_length);
}

}  // namespace

UdpGsoBatch::UdpGsoBatch() : buffer_(kVirtioNetHdrLength + kMaxIpLength + 40) {}

void UdpGsoBatch::clear() {
  segments_ = length_ = headers_ = segment_size_ = 0;
  closed_ = finished_ = false;
}

bool UdpGsoBatch::add(common::Bytes packet) {
  const std::size_t headers = udp_headers(packet);
  if (headers == 0) return false;
  const std::size_t payload = packet.size() - headers;
  std::uint8_t* first = buffer_.data() + kVirtioNetHdrLength;
  if (segments_ == 0) {
    if (packet.size() > buffer_.size() - kVirtioNetHdrLength) return false;
    std::memcpy(first, packet.data(), packet.size());
    headers_ = headers;
    length_ = packet.size();
    segment_size_ = payload;
    segments_ = 1;
    closed_ = payload == 0;  // nothing can follow an empty datagram
    finished_ = false;
    return true;
  }
  // The length limit: IPv4's total length, IPv6's payload length (the UDP length with it).
  const std::size_t limit = headers_ == 28 ? kMaxIpLength : kMaxIpLength + 40;
  if (finished_ || closed_ || headers != headers_ || payload == 0 || payload > segment_size_ ||
      segments_ >= kMaxSegments || length_ + payload > limit ||
      !same_headers(first, packet.data(), headers)) {
    return false;
  }
  std::memcpy(first + length_, packet.data() + headers, payload);
  length_ += payload;
  ++segments_;
  closed_ = payload < segment_size_;
  return true;
}

std::span<const std::uint8_t> UdpGsoBatch::write_form() {
  VirtioNetHdr hdr;
  std::uint8_t* ip = buffer_.data() + kVirtioNetHdrLength;
  if (!finished_) {
    if (segments_ > 1) set_lengths(ip, headers_, length_ - headers_);
    // CHECKSUM_PARTIAL: the kernel completes (or, delivering locally, trusts) each
    // segment's checksum from the pseudo-header sum left in the field.
    const std::size_t udp_length = length_ - headers_ + kUdpHeader;
    put16(ip + headers_ - kUdpHeader + 6, fold(pseudo_header_sum(ip, headers_, udp_length)));
    finished_ = true;
  }
  hdr.flags = kVirtioNeedsCsum;
  hdr.csum_start = static_cast<std::uint16_t>(headers_ - kUdpHeader);
  hdr.csum_offset = 6;
  if (segments_ > 1) {
    hdr.gso_type = kVirtioGsoUdpL4;
    hdr.hdr_len = static_cast<std::uint16_t>(headers_);
    hdr.gso_size = static_cast<std::uint16_t>(segment_size_);
  }
  std::memcpy(buffer_.data(), &hdr, sizeof hdr);
  return {buffer_.data(), kVirtioNetHdrLength + length_};
}

std::size_t UdpGsoBatch::segment(std::size_t i, std::span<std::uint8_t> out) const {
  if (i >= segments_) return 0;
  const std::size_t offset = headers_ + i * segment_size_;
  const std::size_t payload = std::min(segment_size_, length_ - offset);
  const std::size_t total = kVirtioNetHdrLength + headers_ + payload;
  if (out.size() < total) return 0;
  std::memset(out.data(), 0, kVirtioNetHdrLength);
  std::uint8_t* ip = out.data() + kVirtioNetHdrLength;
  const std::uint8_t* first = buffer_.data() + kVirtioNetHdrLength;
  std::memcpy(ip, first, headers_);
  std::memcpy(ip + headers_, first + offset, payload);
  set_lengths(ip, headers_, payload);
  std::uint8_t* udp = ip + headers_ - kUdpHeader;
  put16(udp + 6, 0);
  std::uint16_t sum = common::internet_checksum(
      common::Bytes(udp, kUdpHeader + payload),
      pseudo_header_sum(ip, headers_, kUdpHeader + payload));
  if (sum == 0) sum = 0xffff;
  put16(udp + 6, sum);
  return total;
}

}  // namespace quicstep::client::tun
