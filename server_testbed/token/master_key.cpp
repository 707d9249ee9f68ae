#include "server_testbed/token/master_key.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "server_testbed/token/universal_token.hpp"

namespace quicstep::server_testbed::token {

namespace {
constexpr std::size_t kMasterKeyMax = 4096;
}

common::Result<std::vector<std::uint8_t>, common::Failure> load_master_key(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::Failure("master key `" + path + "': " + std::strerror(errno));
  std::vector<std::uint8_t> key;
  char c = 0;
  while (key.size() <= kMasterKeyMax && in.get(c)) key.push_back(static_cast<std::uint8_t>(c));
  if (key.size() < kMasterKeyMin) {
    return common::Failure("master key `" + path + "': " + std::to_string(key.size()) +
                           " octets, need at least " + std::to_string(kMasterKeyMin) +
                           " (head -c 32 /dev/urandom > " + path + ")");
  }
  if (key.size() > kMasterKeyMax) {
    return common::Failure("master key `" + path + "': longer than " +
                           std::to_string(kMasterKeyMax) + " octets (is it the right file?)");
  }
  return key;
}

}  // namespace quicstep::server_testbed::token
