// --static-hosts FILE: fixed name → addresses for tests, instead of DNS. Lines are
// "name ip [ip...]"; blank lines and "#" comments are skipped.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.hpp"

namespace quicstep::measurement::probe {

struct StaticHostAddresses {
  std::vector<std::string> a;     // IPv4, dotted
  std::vector<std::string> aaaa;  // IPv6, canonical text
};

using StaticHosts = std::unordered_map<std::string, StaticHostAddresses>;

// Parses the whole text into *hosts. Failure: "<origin>:<line>: <reason>" (a bad name or
// address, quoted).
common::Outcome parse_static_hosts(std::string_view text, std::string_view origin,
                                   StaticHosts* hosts);

// Reads and parses a file. Failures as above, or "<file>: cannot read".
common::Outcome load_static_hosts(const std::string& file, StaticHosts* hosts);

}  // namespace quicstep::measurement::probe
