// parse_ip_packet over arbitrary bytes, then DNS when either port is 53 (UDP, or TCP with
// its length prefix). Beyond "no crash", it checks what callers rely on: every view lies
// inside the packet, ports are set exactly when a UDP or TCP header was parsed, and a
// non-first fragment never yields one.
#include <cstddef>
#include <cstdint>

#include "common/dns_message.hpp"
#include "common/ip_packet.hpp"
#include "fuzz_checks.hpp"

namespace {

using quicstep::common::Bytes;
using quicstep::common::IpPacket;

using quicstep::fuzz::check_inside;
using quicstep::fuzz::sink;
using quicstep::fuzz::touch;

void check_packet(Bytes data, const IpPacket& p) {
  check_inside(data, p.ip_payload);
  check_inside(p.ip_payload, p.payload);
  touch(p.payload);
  if (p.udp && p.tcp) __builtin_trap();
  if (!p.has_l4_header && (p.udp || p.tcp)) __builtin_trap();
  if (!p.udp && !p.tcp && (p.src_port != 0 || p.dst_port != 0)) __builtin_trap();
  if (p.tcp) check_inside(p.ip_payload, p.tcp->options);
  sink = static_cast<std::uint8_t>(quicstep::common::transport_checksum_valid(p));
  sink = static_cast<std::uint8_t>(p.src.to_string().size() + p.dst.octets().size());
}

void check_dns(const IpPacket& p) {
  if (p.src_port != 53 && p.dst_port != 53) return;
  Bytes message = p.payload;
  if (p.tcp) {
    auto frame = quicstep::common::parse_dns_tcp_frame(message);
    if (!frame) return;
    check_inside(p.payload, frame->message);
    message = frame->message;
  }
  auto dns = quicstep::common::parse_dns_message(message);
  if (!dns) return;
  if (dns->questions.size() != dns->header.qdcount) __builtin_trap();
  for (const auto& q : dns->questions) {
    if (q.name.empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes input(data, size);
  auto packet = quicstep::common::parse_ip_packet(input);
  if (!packet) return 0;
  check_packet(input, *packet);
  check_dns(*packet);
  return 0;
}
