// KernelProbe: reads over netlink (libmnl, no program started) the kernel state that the
// daemon's self-healing checks (client/kernel/healer.hpp): whether an nft table exists, how
// many policy-routing rules sit at each priority, whether a table has a default route through
// a device. Each read is one request and its answer, microseconds: cheap enough to run on
// every announcement of a change and every 500 ms. Control plane; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/ip_packet.hpp"

struct mnl_socket;
struct nlmsghdr;

namespace quicstep::client::kernel {

class KernelProbe {
 public:
  KernelProbe() = default;
  KernelProbe(const KernelProbe&) = delete;
  KernelProbe& operator=(const KernelProbe&) = delete;
  ~KernelProbe();

  // Opens both sockets (rtnetlink, nfnetlink) in the caller's network namespace. Failures:
  // the sockets'.
  common::Outcome open();
  bool is_open() const { return route_ != nullptr; }

  // Whether nft table `name` of `family` (NFPROTO_INET, NFPROTO_NETDEV, NFPROTO_IPV4, ...)
  // exists; nullopt when the kernel's answer was neither the table nor ENOENT.
  std::optional<bool> nft_table_exists(std::uint8_t family, const std::string& name);
  // The number of rules of `family` at each priority; nullopt when the dump failed.
  std::optional<std::map<std::uint32_t, int>> rule_priorities(common::IpFamily family);
  // Whether routing table `table` of `family` has a default route out of device `ifindex`;
  // nullopt when the dump failed.
  std::optional<bool> has_default_route(common::IpFamily family, std::uint32_t table,
                                        unsigned ifindex);
  // The source address the main table's default route gives a new socket of `family`:
  // the lowest-metric default route's preferred source, else the first global address of
  // its device that may be used (not tentative, not failed duplicate detection; deprecated
  // ones only when nothing else is left), as text. "" when there is no default route or its
  // device has no such address; nullopt when a dump failed.
  std::optional<std::string> native_source(common::IpFamily family);
  // The first global address of `family` on device `ifindex` in the kernel's order (any
  // state but failed duplicate detection), as text: a tunnel device's own address, which
  // stateless addressing writes into channel packets. "" when it has none; nullopt when the
  // dump failed.
  std::optional<std::string> first_global_address(common::IpFamily family, unsigned ifindex);
  // Every such address, in the kernel's order (the first is first_global_address's): the
  // sources masquerade may choose for packets out of the device (nat addressing).
  std::optional<std::vector<std::string>> global_addresses(common::IpFamily family,
                                                           unsigned ifindex);
  // The device a packet to `dst` with mark `mark` leaves from (`ip route get DST mark M`:
  // the kernel's own lookup, policy rules included); nullopt when there is no route or the
  // request failed.
  std::optional<unsigned> route_device(const common::IpAddress& dst, std::uint32_t mark);

 private:
  // Sends the request at `nlh` on `s` and runs `on_message` on each answer until the
  // dump's end or an error. Returns 0 or the errno (the kernel's, or the socket's).
  int exchange(mnl_socket* s, nlmsghdr* nlh, int (*on_message)(const nlmsghdr*, void*),
               void* data);

  // An rtnetlink dump of `type` (RTM_GETRULE, RTM_GETROUTE, RTM_GETADDR) for `family`
  // (AF_INET, AF_INET6), whose fixed header of `header_size` octets starts with the family:
  // exchange()'s result.
  int dump(std::uint16_t type, int family, std::size_t header_size,
           int (*on_message)(const nlmsghdr*, void*), void* data);

  mnl_socket* route_ = nullptr;
  mnl_socket* nft_ = nullptr;
  std::uint32_t seq_ = 1;
};

}  // namespace quicstep::client::kernel
