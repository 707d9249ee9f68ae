// TCP header view (RFC 9293): a const, non-owning view over one segment's bytes. The
// segment's length comes from the IP layer: everything after the header is payload.
#pragma once

#include <cstdint>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::common {

inline constexpr std::size_t kTcpMinHeaderLength = 20;

// Bits of TcpView::flags.
namespace tcp_flag {
inline constexpr std::uint8_t kFin = 0x01;
inline constexpr std::uint8_t kSyn = 0x02;
inline constexpr std::uint8_t kRst = 0x04;
inline constexpr std::uint8_t kPsh = 0x08;
inline constexpr std::uint8_t kAck = 0x10;
inline constexpr std::uint8_t kUrg = 0x20;
inline constexpr std::uint8_t kEce = 0x40;
inline constexpr std::uint8_t kCwr = 0x80;
}  // namespace tcp_flag

struct TcpView {
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t data_offset = 0;  // header length in 32-bit words, 5..15
  std::uint8_t flags = 0;        // tcp_flag bits (the low 8 flag bits)
  std::uint16_t window = 0;
  std::uint16_t checksum = 0;  // as on the wire; not verified here
  std::uint16_t urgent_pointer = 0;
  Bytes options;  // possibly empty; not interpreted
  Bytes payload;  // everything after the header

  std::size_t header_length() const { return std::size_t{data_offset} * 4; }
  bool fin() const { return (flags & tcp_flag::kFin) != 0; }
  bool syn() const { return (flags & tcp_flag::kSyn) != 0; }
  bool rst() const { return (flags & tcp_flag::kRst) != 0; }
  bool psh() const { return (flags & tcp_flag::kPsh) != 0; }
  bool ack_flag() const { return (flags & tcp_flag::kAck) != 0; }
};

// Parses the TCP header at the start of `segment` (the IP payload); the view points into
// `segment`.
// Errors:
//   truncated - fewer than 20 bytes, or fewer than the data offset says;
//   bad_value - data offset < 5.
Result<TcpView> parse_tcp(Bytes segment);

}  // namespace quicstep::common
