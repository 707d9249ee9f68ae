#include "client/kernel/forwarding.hpp"

#include <fstream>

namespace quicstep::client::kernel {

namespace {

bool switched_on(const std::string& path) {
  std::ifstream in(path);
  int value = 0;
  return static_cast<bool>(in >> value) && value != 0;
}

}  // namespace

bool host_forwards(const std::string& sys_root) {
  return switched_on(sys_root + "/ipv4/ip_forward") ||
         switched_on(sys_root + "/ipv6/conf/all/forwarding");
}

}  // namespace quicstep::client::kernel
