// Loads the master key of the universal token from a file: at least kMasterKeyMin raw octets
// (e.g. `head -c 32 /dev/urandom > key`). The whole file is the key (at most 4096 octets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace quicstep::server_testbed::token {

// The file's octets. Failures name the file and why (missing, unreadable, shorter than 32
// octets, longer than 4096).
common::Result<std::vector<std::uint8_t>, common::Failure> load_master_key(const std::string& path);

}  // namespace quicstep::server_testbed::token
