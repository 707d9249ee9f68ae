// Address prefixes for quicstep-flood, and the rule that keeps the flood inside the lab:
// every spoofed source and every target must lie in 198.18.0.0/15 (RFC 2544 benchmarking)
// or 2001:db8::/32 (RFC 3849 documentation). Nothing else is ever accepted.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::server_testbed::flood {

struct Prefix {
  common::IpAddress base;   // host bits cleared
  unsigned length = 0;      // 0..32 (v4) or 0..128 (v6)
};

// Parses "198.18.232.0/22", "2001:db8:232::/64" or a bare address (a /32 or /128).
// Failures (quoting the text): not an address, a length that is not a whole decimal number in
// range, trailing text.
common::Result<Prefix, common::Failure> parse_prefix(std::string_view text);

// Whether every address of `prefix` lies inside 198.18.0.0/15 or 2001:db8::/32.
bool inside_lab(const Prefix& prefix);

// Whether `address` lies inside 198.18.0.0/15 or 2001:db8::/32.
bool inside_lab(const common::IpAddress& address);

// A uniformly random address of `prefix` (host bits from rng).
common::IpAddress random_address(const Prefix& prefix, std::mt19937_64& rng);

}  // namespace quicstep::server_testbed::flood
