// Fuzzes ip_datagram_of_frame over every link type quicstep-inspect reads: the first input
// byte picks the link type, the rest is the frame. A result must lie inside the frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/link_layer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace quicstep::common;
  if (size == 0) return 0;
  static constexpr LinkType kTypes[] = {LinkType::null_loopback, LinkType::ethernet, LinkType::raw,
                                        LinkType::raw_alt,       LinkType::linux_sll, LinkType::ipv4,
                                        LinkType::ipv6,          LinkType::linux_sll2};
  const LinkType type = kTypes[data[0] % (sizeof kTypes / sizeof kTypes[0])];
  const Bytes frame(data + 1, size - 1);
  auto ip = ip_datagram_of_frame(type, frame);
  if (ip && (ip->data() < frame.data() || ip->data() + ip->size() > frame.data() + frame.size())) std::abort();
  return 0;
}
