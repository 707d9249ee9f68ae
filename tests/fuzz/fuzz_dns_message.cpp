// DNS message parsing over arbitrary bytes. Beyond "no crash": a parsed message re-encodes,
// and the encoding parses back to the same header and questions (names are escaped text
// that the encoder reads back); names stay within RFC 1035's limits. The input is also read
// as a DNS-over-TCP stream, and a name is read at an offset chosen by the input, to reach
// compression pointers from places the question section does not start.
#include <cstddef>
#include <cstdint>

#include "common/dns_message.hpp"

namespace {

using quicstep::common::ByteReader;
using quicstep::common::Bytes;
using quicstep::common::ByteWriter;
using quicstep::common::DnsMessage;

void check_round_trip(const DnsMessage& m) {
  ByteWriter w;
  if (!quicstep::common::encode_dns_message(w, m)) __builtin_trap();
  auto again = quicstep::common::parse_dns_message(w.buffer());
  if (!again || again->questions.size() != m.questions.size()) __builtin_trap();
  if (again->header.id != m.header.id || again->header.qr != m.header.qr ||
      again->header.opcode != m.header.opcode || again->header.rcode != m.header.rcode) {
    __builtin_trap();
  }
  for (std::size_t i = 0; i < m.questions.size(); ++i) {
    const auto& a = m.questions[i];
    const auto& b = again->questions[i];
    if (a.name != b.name || a.qtype != b.qtype || a.qclass != b.qclass) __builtin_trap();
  }
}

void read_name_at(Bytes message, std::size_t offset) {
  ByteReader r(message);
  if (!r.skip(offset)) return;
  const std::size_t before = r.position();
  auto name = quicstep::common::read_dns_name(r);
  if (!name) {
    if (r.position() != before) __builtin_trap();  // a failed read consumes nothing
    return;
  }
  // Escaping at most quadruples a byte: 255 wire bytes stay under 4 * 255 characters.
  if (name->empty() || name->size() > 4 * quicstep::common::kDnsMaxNameLength) __builtin_trap();
  if (r.position() <= before) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes input(data, size);
  if (auto m = quicstep::common::parse_dns_message(input)) check_round_trip(*m);
  if (auto frame = quicstep::common::parse_dns_tcp_frame(input)) {
    if (frame->frame_length != frame->message.size() + 2 || frame->frame_length > size)
      __builtin_trap();
    (void)quicstep::common::parse_dns_message(frame->message);
  }
  if (size > 0) read_name_at(input, 12 + data[size - 1] % 64);
  return 0;
}
