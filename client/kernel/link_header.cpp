#include "client/kernel/link_header.hpp"

#include <linux/if_arp.h>
#include <linux/if_ether.h>

#include <fstream>

namespace quicstep::client::kernel {

std::optional<common::Bytes> egress_ip_packet(common::Bytes copy, bool ethernet) {
  if (!ethernet) return copy;
  std::size_t at = 12;  // the EtherType after two MAC addresses
  for (;;) {
    if (copy.size() < at + 2) return std::nullopt;
    const unsigned type = (unsigned{copy[at]} << 8) | copy[at + 1];
    if (type == ETH_P_8021Q || type == ETH_P_8021AD) {
      at += 4;  // a VLAN tag: its EtherType follows
      continue;
    }
    if (type != ETH_P_IP && type != ETH_P_IPV6) return std::nullopt;
    return copy.subspan(at + 2);
  }
}

bool is_ethernet_device(const std::string& ifname) {
  std::ifstream f("/sys/class/net/" + ifname + "/type");
  unsigned type = 0;
  return static_cast<bool>(f >> type) && type == ARPHRD_ETHER;
}

}  // namespace quicstep::client::kernel
