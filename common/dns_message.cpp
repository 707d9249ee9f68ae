#include "common/dns_message.hpp"

#include <array>

namespace quicstep::common {
namespace {

// Appends one label as lower-case text, escaped as the header's file comment says.
void append_label(std::string& out, Bytes label) {
  for (const std::uint8_t c : label) {
    if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if (c == '.' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x21 || c > 0x7e) {
      out += '\\';
      out += static_cast<char>('0' + c / 100);
      out += static_cast<char>('0' + c / 10 % 10);
      out += static_cast<char>('0' + c % 10);
    } else {
      out += static_cast<char>(c);
    }
  }
}

// A reader over `message`, positioned at `offset`. Precondition: offset <= message.size().
ByteReader reader_at(Bytes message, std::size_t offset) {
  ByteReader r(message);
  (void)r.skip(offset);
  return r;
}

// Reads one text label of `name` from `i` up to an unescaped '.' or the end, into `label`.
// Errors: bad_value (over 63 bytes, or a bad escape).
Result<std::size_t> read_text_label(std::string_view name, std::size_t& i,
                                    std::array<std::uint8_t, kDnsMaxLabelLength>& label) {
  std::size_t n = 0;
  while (i < name.size() && name[i] != '.') {
    unsigned value = static_cast<unsigned char>(name[i++]);
    if (value == '\\') {
      if (i == name.size()) return Error::bad_value;
      const auto digit = [&](std::size_t k) { return name[k] >= '0' && name[k] <= '9'; };
      if (digit(i)) {
        if (i + 3 > name.size() || !digit(i + 1) || !digit(i + 2)) return Error::bad_value;
        value = (name[i] - '0') * 100u + (name[i + 1] - '0') * 10u + (name[i + 2] - '0');
        if (value > 255) return Error::bad_value;
        i += 3;
      } else {
        value = static_cast<unsigned char>(name[i++]);
      }
    }
    if (n == label.size()) return Error::bad_value;
    label[n++] = static_cast<std::uint8_t>(value);
  }
  return n;
}

}  // namespace

Result<DnsHeader> parse_dns_header(Bytes message) {
  ByteReader r(message);
  auto fixed = r.bytes(kDnsHeaderLength);
  if (!fixed) return fixed.error();
  // `h` spans exactly the 12 header bytes: none of its reads below can fail.
  ByteReader h(*fixed);
  DnsHeader d;
  d.id = h.u16().value_or(0);
  const std::uint8_t b2 = h.u8().value_or(0);
  const std::uint8_t b3 = h.u8().value_or(0);
  d.qr = (b2 & 0x80) != 0;
  d.opcode = (b2 >> 3) & 0x0f;
  d.aa = (b2 & 0x04) != 0;
  d.tc = (b2 & 0x02) != 0;
  d.rd = (b2 & 0x01) != 0;
  d.ra = (b3 & 0x80) != 0;
  d.ad = (b3 & 0x20) != 0;
  d.cd = (b3 & 0x10) != 0;
  d.rcode = b3 & 0x0f;
  d.qdcount = h.u16().value_or(0);
  d.ancount = h.u16().value_or(0);
  d.nscount = h.u16().value_or(0);
  d.arcount = h.u16().value_or(0);
  return d;
}

Result<std::string> read_dns_name(ByteReader& reader) {
  const Bytes message = reader.all();
  ByteReader cur = reader_at(message, reader.position());
  std::size_t run_start = reader.position();  // where the current run of labels began
  std::size_t consumed = 0;  // the name's length at its own place; set at the first pointer
  std::size_t hops = 0;
  std::size_t wire_length = 1;  // the final zero
  std::string out;
  for (;;) {
    const std::size_t at = cur.position();
    auto length = cur.u8();
    if (!length) return length.error();
    const std::uint8_t kind = *length & 0xc0;
    if (kind == 0xc0) {
      auto low = cur.u8();
      if (!low) return low.error();
      const std::size_t target = (std::size_t{*length & 0x3fu} << 8) | *low;
      // Strictly before the current run: every hop moves backwards, so none can loop.
      if (target >= run_start) return Error::bad_value;
      if (++hops > kDnsMaxPointerHops) return Error::limit_exceeded;
      if (hops == 1) consumed = at + 2 - reader.position();
      cur = reader_at(message, target);
      run_start = target;
      continue;
    }
    if (kind != 0) return Error::bad_value;  // 0x40 extended, 0x80 reserved
    if (*length == 0) {
      if (hops == 0) consumed = at + 1 - reader.position();
      break;
    }
    wire_length += std::size_t{*length} + 1;
    if (wire_length > kDnsMaxNameLength) return Error::limit_exceeded;
    auto label = cur.bytes(*length);
    if (!label) return label.error();
    if (!out.empty()) out += '.';
    append_label(out, *label);
  }
  if (out.empty()) out.push_back('.');  // the root (push_back: GCC 12 -Wrestrict misfires on = ".")
  (void)reader.skip(consumed);  // cannot fail: those bytes were read above
  return out;
}

Result<DnsMessage> parse_dns_message(Bytes message) {
  auto header = parse_dns_header(message);
  if (!header) return header.error();
  if (header->qdcount > kDnsMaxQuestions) return Error::limit_exceeded;
  DnsMessage m;
  m.header = *header;
  m.questions.reserve(header->qdcount);
  ByteReader r = reader_at(message, kDnsHeaderLength);
  for (std::size_t i = 0; i < header->qdcount; ++i) {
    auto name = read_dns_name(r);
    if (!name) return name.error();
    auto qtype = r.u16();
    if (!qtype) return qtype.error();
    auto qclass = r.u16();
    if (!qclass) return qclass.error();
    m.questions.push_back(DnsQuestion{std::move(*name), *qtype, *qclass});
  }
  return m;
}

Result<DnsTcpFrame> parse_dns_tcp_frame(Bytes stream) {
  ByteReader r(stream);
  auto length = r.u16();
  if (!length) return Error::incomplete;
  if (*length < kDnsHeaderLength) return Error::bad_length;
  auto message = r.bytes(*length);
  if (!message) return Error::incomplete;
  return DnsTcpFrame{*message, 2 + message->size()};
}

Status write_dns_name(ByteWriter& writer, std::string_view name) {
  if (name.empty() || name == ".") {
    writer.u8(0);
    return {};
  }
  std::array<std::uint8_t, kDnsMaxNameLength> wire{};
  std::array<std::uint8_t, kDnsMaxLabelLength> label{};
  std::size_t n = 0;
  std::size_t i = 0;
  while (i < name.size()) {
    auto length = read_text_label(name, i, label);
    if (!length) return length.error();
    if (*length == 0) return Error::bad_value;  // "a..b", or a leading dot
    if (n + 1 + *length + 1 > wire.size()) return Error::limit_exceeded;
    wire[n++] = static_cast<std::uint8_t>(*length);
    for (std::size_t k = 0; k < *length; ++k) wire[n++] = label[k];
    if (i < name.size()) ++i;  // the '.'; a final one just ends the name
  }
  wire[n++] = 0;
  writer.bytes(Bytes(wire).first(n));
  return {};
}

void write_dns_header(ByteWriter& writer, const DnsHeader& h) {
  const auto bit = [](bool b, int shift) {
    return static_cast<std::uint8_t>((b ? 1 : 0) << shift);
  };
  writer.u16(h.id);
  writer.u8(bit(h.qr, 7) | static_cast<std::uint8_t>((h.opcode & 0x0f) << 3) | bit(h.aa, 2) |
            bit(h.tc, 1) | bit(h.rd, 0));
  writer.u8(bit(h.ra, 7) | bit(h.ad, 5) | bit(h.cd, 4) | static_cast<std::uint8_t>(h.rcode & 0x0f));
  writer.u16(h.qdcount).u16(h.ancount).u16(h.nscount).u16(h.arcount);
}

Status encode_dns_message(ByteWriter& writer, const DnsMessage& message) {
  if (message.questions.size() > 0xffff) return Error::limit_exceeded;
  DnsHeader header = message.header;
  header.qdcount = static_cast<std::uint16_t>(message.questions.size());
  header.ancount = header.nscount = header.arcount = 0;  // no records encoded yet
  write_dns_header(writer, header);
  for (const DnsQuestion& q : message.questions) {
    if (auto s = write_dns_name(writer, q.name); !s) return s;
    writer.u16(q.qtype).u16(q.qclass);
  }
  return {};
}

Status encode_dns_tcp_message(ByteWriter& writer, const DnsMessage& message) {
  ByteWriter body;
  if (auto s = encode_dns_message(body, message); !s) return s;
  if (body.size() > 0xffff) return Error::limit_exceeded;
  writer.u16(static_cast<std::uint16_t>(body.size())).bytes(body.buffer());
  return {};
}

DnsMessage make_dns_query(std::uint16_t id, std::string_view name, std::uint16_t qtype) {
  DnsMessage m;
  m.header.id = id;
  m.header.rd = true;
  m.questions.push_back(DnsQuestion{std::string(name), qtype, kDnsClassIn});
  return m;
}

}  // namespace quicstep::common
