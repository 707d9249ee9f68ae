// Forged DNS answers: what a GFW-like censor sends back, faster than the real resolver,
// for a query whose name is blocked. An A or AAAA question gets one answer record with the
// forged address; the answer's name is a compression pointer to the question.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/dns_message.hpp"
#include "common/error.hpp"

namespace quicstep::censor {

struct ForgedAddresses {
  std::array<std::uint8_t, 4> v4{198, 18, 0, 255};                     // A answers
  std::array<std::uint8_t, 16> v6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,  // AAAA answers
                                  0,    0,    0,    0,    0, 0, 0xde, 0xad};
  std::uint32_t ttl = 60;  // seconds
};

// The DNS response message to `query` (its first question only): QR, RD copied, RA set,
// rcode NOERROR, that question, one A or AAAA answer.
// Errors:
//   bad_value   - `query` is a response, or has no question;
//   unsupported - the first question is not class IN, type A or AAAA;
//   write_dns_name's errors for a name that cannot be encoded.
common::Result<std::vector<std::uint8_t>> forge_dns_answer(const common::DnsMessage& query,
                                                           const ForgedAddresses& addresses);

}  // namespace quicstep::censor
