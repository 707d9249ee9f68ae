#include "client/tun/io/tun_device.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

namespace quicstep::client::tun {
namespace {

common::Result<net::UniqueFd, common::Failure> attach(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    return common::Failure("TUN device name '" + name + "' is not 1-15 characters");
  }
  net::UniqueFd fd(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return common::Failure(std::string("open /dev/net/tun: ") + std::strerror(errno));
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, name.data(), name.size());
  if (ioctl(fd.get(), TUNSETIFF, &ifr) != 0) {
    return common::Failure("TUNSETIFF " + name + ": " + std::strerror(errno));
  }
  return fd;
}

}  // namespace

common::Result<net::UniqueFd, common::Failure> open_tun(const std::string& name) {
  auto fd = attach(name);
  if (!fd.ok()) return fd;
  if (ioctl(fd->get(), TUNSETPERSIST, 1) != 0) {
    return common::Failure("TUNSETPERSIST " + name + ": " + std::strerror(errno));
  }
  return fd;
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
