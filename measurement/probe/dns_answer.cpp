#include "measurement/probe/dns_answer.hpp"

#include <arpa/inet.h>

#include "common/byte_writer.hpp"
#include "common/dns_message.hpp"

namespace quicstep::measurement::probe {

using common::Error;

std::string_view to_string(DnsStatus status) {
  switch (status) {
    case DnsStatus::ok: return "ok";
    case DnsStatus::nxdomain: return "nxdomain";
    case DnsStatus::servfail: return "servfail";
    case DnsStatus::timeout: return "timeout";
    case DnsStatus::no_answer: return "no_answer";
  }
  return "servfail";
}

common::Result<std::vector<std::uint8_t>> build_address_query(std::uint16_t id,
                                                              std::string_view name,
                                                              std::uint16_t qtype) {
  common::ByteWriter writer;
  const auto status = common::encode_dns_message(writer, common::make_dns_query(id, name, qtype));
  if (!status) return status.error();
  return writer.take();
}

common::Result<DnsAnswer> parse_address_answer(common::Bytes message, std::uint16_t id,
                                               std::string_view name, std::uint16_t qtype) {
  auto parsed = common::parse_dns_message(message);
  if (!parsed) return parsed.error();
  const common::DnsHeader& h = parsed->header;
  if (!h.qr || h.id != id || parsed->questions.size() != 1) return Error::bad_value;
  const common::DnsQuestion& q = parsed->questions.front();
  if (q.name != name || q.qtype != qtype || q.qclass != common::kDnsClassIn) {
    return Error::bad_value;
  }
  DnsAnswer answer;
  if (h.rcode == 3) {
    answer.status = DnsStatus::nxdomain;
    return answer;
  }
  if (h.rcode != 0) {
    answer.status = DnsStatus::servfail;
    return answer;
  }
  // Skip the header and the question again to reach the answer section.
  common::ByteReader reader(message);
  if (!reader.skip(common::kDnsHeaderLength)) return Error::truncated;
  if (!common::read_dns_name(reader)) return Error::truncated;
  if (!reader.skip(4)) return Error::truncated;
  for (std::uint16_t i = 0; i < h.ancount; ++i) {
    auto owner = common::read_dns_name(reader);
    if (!owner) return owner.error();
    auto type = reader.u16();
    auto klass = reader.u16();
    auto ttl = reader.u32();
    auto rdata = reader.u16_prefixed();
    if (!type || !klass || !ttl || !rdata) return Error::truncated;
    if (*klass != common::kDnsClassIn || *type != qtype) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (qtype == common::dns_type::kA && rdata->size() == 4) {
      inet_ntop(AF_INET, rdata->data(), text, sizeof(text));
    } else if (qtype == common::dns_type::kAaaa && rdata->size() == 16) {
      inet_ntop(AF_INET6, rdata->data(), text, sizeof(text));
    } else {
      return Error::bad_length;
    }
    answer.addresses.emplace_back(text);
  }
  answer.status = answer.addresses.empty() ? DnsStatus::no_answer : DnsStatus::ok;
  return answer;
}

DnsStatus combine_status(DnsStatus a, DnsStatus aaaa) {
  if (a == DnsStatus::ok || aaaa == DnsStatus::ok) return DnsStatus::ok;
  if (a == DnsStatus::nxdomain || aaaa == DnsStatus::nxdomain) return DnsStatus::nxdomain;
  if (a == DnsStatus::servfail || aaaa == DnsStatus::servfail) return DnsStatus::servfail;
  if (a == DnsStatus::timeout || aaaa == DnsStatus::timeout) return DnsStatus::timeout;
  return DnsStatus::no_answer;
}

}  // namespace quicstep::measurement::probe
