#include "lab/censor/dns_forgery.hpp"

#include "common/byte_writer.hpp"

namespace quicstep::censor {

using common::dns_type::kA;
using common::dns_type::kAaaa;

common::Result<std::vector<std::uint8_t>> forge_dns_answer(const common::DnsMessage& query,
                                                           const ForgedAddresses& addresses) {
  if (query.header.qr || query.questions.empty()) return common::Error::bad_value;
  const common::DnsQuestion& q = query.questions.front();
  if (q.qclass != common::kDnsClassIn || (q.qtype != kA && q.qtype != kAaaa)) {
    return common::Error::unsupported;
  }
  common::DnsHeader h;
  h.id = query.header.id;
  h.qr = true;
  h.opcode = query.header.opcode;
  h.rd = query.header.rd;
  h.ra = true;
  h.qdcount = 1;
  h.ancount = 1;
  common::ByteWriter w;
  common::write_dns_header(w, h);
  if (auto ok = common::write_dns_name(w, q.name); !ok) return ok.error();
  w.u16(q.qtype).u16(q.qclass);
  // Answer: name = pointer to the question at offset 12.
  w.u16(0xc000 | common::kDnsHeaderLength).u16(q.qtype).u16(common::kDnsClassIn).u32(addresses.ttl);
  if (q.qtype == kA) {
    w.u16(4).bytes(addresses.v4);
  } else {
    w.u16(16).bytes(addresses.v6);
  }
  return w.take();
}

}  // namespace quicstep::censor
