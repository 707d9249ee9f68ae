// --static-hosts FILE: fixed name → addresses for tests, instead of DNS. Lines are
// "name ip [ip...]"; blank lines and "#" comments are skipped.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace quicstep::measurement::probe {

struct StaticHostAddresses {
  std::vector<std::string> a;     // IPv4, dotted
  std::vector<std::string> aaaa;  // IPv6, canonical text
};

using StaticHosts = std::unordered_map<std::string, StaticHostAddresses>;

// Parses the whole text. On error returns false and *error = "<origin>:<line>: <reason>"
// (a bad name or address, quoted).
bool parse_static_hosts(std::string_view text, std::string_view origin, StaticHosts* hosts,
                        std::string* error);

// Reads and parses a file; *error as above, or "<file>: cannot read".
bool load_static_hosts(const std::string& file, StaticHosts* hosts, std::string* error);

}  // namespace quicstep::measurement::probe
