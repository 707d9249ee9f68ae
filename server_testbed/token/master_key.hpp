// Loads the master key of the universal token from a file: at least kMasterKeyMin raw octets
// (e.g. `head -c 32 /dev/urandom > key`). The whole file is the key (at most 4096 octets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace quicstep::server_testbed::token {

// The file's octets, or an empty vector with *error saying which file and why (missing,
// unreadable, shorter than 32 octets, longer than 4096).
std::vector<std::uint8_t> load_master_key(const std::string& path, std::string* error);

}  // namespace quicstep::server_testbed::token
