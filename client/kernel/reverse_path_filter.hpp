// Strict IPv4 reverse-path filtering (rp_filter = 1, RHEL's default) drops the answers that
// QUICstep depends on: a moved flow's answers on the native device (the reverse route of
// the server's port is the channel's: the routing rules send that port to the channel), and
// on the queue path the channel's own. Measured in the lab: with rp_filter 1 on every
// device a 10 MB fetch hung on both native paths (0 bytes after the move), while the
// guard, which counts before the kernel's check, saw the answers arrive.
//
// The kernel applies max(conf/all, conf/<device>), so a device is strict when that is 1.
// loosen() writes 2 (loose: the source must be routable at all) to a strict device and
// keeps the device's own value; restore() writes those back where the value is still the
// 2 written (a value someone changed since is theirs). IPv6 has no rp_filter.
#pragma once

#include <map>
#include <string>

namespace quicstep::client::kernel {

class ReversePathFilter {
 public:
  // `conf_root`: /proc/sys/net/ipv4/conf (a test's directory of all/ and <device>/ files).
  explicit ReversePathFilter(std::string conf_root = "/proc/sys/net/ipv4/conf")
      : root_(std::move(conf_root)) {}

  // Loosens `device` if it is strict; true when it wrote (again, if someone set it back).
  bool loosen(const std::string& device);
  // Puts back the device values loosen() replaced; forgets them.
  void restore();
  // How many devices were loosened since the start (writes, re-loosening included).
  unsigned long loosened() const { return loosened_; }

 private:
  std::string read(const std::string& device) const;
  bool write(const std::string& device, const std::string& value) const;

  std::string root_;
  std::map<std::string, std::string> saved_;  // device -> its value before loosen()
  unsigned long loosened_ = 0;
};

}  // namespace quicstep::client::kernel
