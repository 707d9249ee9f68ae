// DNS for quicstep-probe, sans IO: the A/AAAA query bytes, the answer's addresses and
// status from untrusted response bytes, and the status of a name from its two answers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::measurement::probe {

enum class DnsStatus { ok, nxdomain, servfail, timeout, no_answer };
std::string_view to_string(DnsStatus status);

struct DnsAnswer {
  DnsStatus status = DnsStatus::no_answer;
  std::vector<std::string> addresses;  // textual A or AAAA addresses, in answer order
};

// A recursive query for `name` (qtype A or AAAA) as wire bytes. Errors: bad_value or
// limit_exceeded for a name that cannot be encoded.
common::Result<std::vector<std::uint8_t>> build_address_query(std::uint16_t id,
                                                              std::string_view name,
                                                              std::uint16_t qtype);

// The answer to the query (id, name, qtype): its rcode mapped to a status (0 → ok when at
// least one record of qtype is present, else no_answer; 3 → nxdomain; anything else →
// servfail) and every record of qtype in the answer section (CNAME chains included: owner
// names are not checked, the resolver followed the chain).
// Errors: bad_value - not a response, or id / question does not match the query (a stray
// or spoofed packet: ignore it); truncated / limit_exceeded from the parser.
common::Result<DnsAnswer> parse_address_answer(common::Bytes message, std::uint16_t id,
                                               std::string_view name, std::uint16_t qtype);

// The status of a name from the statuses of its A and AAAA answers (only the families
// asked; pass ok for a family not asked is wrong: pass the one that was asked twice).
DnsStatus combine_status(DnsStatus a, DnsStatus aaaa);

}  // namespace quicstep::measurement::probe
