#include "client/tun/io/tun_device.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

namespace quicstep::client::tun {
namespace {

common::Result<net::UniqueFd, common::Failure> attach(const std::string& name,
                                                      bool vnet_header = false) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    return common::Failure("TUN device name '" + name + "' is not 1-15 characters");
  }
  net::UniqueFd fd(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return common::Failure(std::string("open /dev/net/tun: ") + std::strerror(errno));
  ifreq ifr{};
  ifr.ifr_flags = static_cast<short>(IFF_TUN | IFF_NO_PI | (vnet_header ? IFF_VNET_HDR : 0));
  std::memcpy(ifr.ifr_name, name.data(), name.size());
  if (ioctl(fd.get(), TUNSETIFF, &ifr) != 0) {
    return common::Failure("TUNSETIFF " + name + ": " + std::strerror(errno));
  }
  return fd;
}

}  // namespace

common::Result<net::UniqueFd, common::Failure> open_tun(const std::string& name,
                                                        bool vnet_header) {
  auto fd = attach(name, vnet_header);
  if (!fd.ok()) return fd;
  if (ioctl(fd->get(), TUNSETPERSIST, 1) != 0) {
    return common::Failure("TUNSETPERSIST " + name + ": " + std::strerror(errno));
  }
  return fd;
}

bool tun_takes_udp_gso(int tun_fd) {
  // linux/if_tun.h of Linux 6.2 (Debian bookworm's headers are 6.1's): the kernel answers
  // EINVAL to flags it does not know, which is the test.
  constexpr unsigned kUso4 = 0x20, kUso6 = 0x40;
  const bool takes = ioctl(tun_fd, TUNSETOFFLOAD, TUN_F_CSUM | kUso4 | kUso6) == 0;
  (void)ioctl(tun_fd, TUNSETOFFLOAD, 0);
  return takes;
}

common::Outcome stop_persisting(int tun_fd, const std::string& name) {
  if (ioctl(tun_fd, TUNSETPERSIST, 0) != 0) {
    return common::Failure("TUNSETPERSIST " + name + " off: " + std::strerror(errno));
  }
  return {};
}

common::Outcome remove_tun(const std::string& name) {
  auto fd = attach(name);
  if (!fd.ok()) return fd.error();
  if (ioctl(fd->get(), TUNSETPERSIST, 0) != 0) {
    return common::Failure("TUNSETPERSIST " + name + " off: " + std::strerror(errno));
  }
  return {};
}

}  // namespace quicstep::client::tun
