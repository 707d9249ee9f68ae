// NamespaceLock: at most one holder of a name in a network namespace, for the programs that
// own a namespace's rules (quicstepd, quicstep-tun). A second one (started by hand beside the
// service, or another instance's --cleanup) would take the first's rules, routes and guard
// away under it, since its start removes what it takes for a crash's leftovers, and the
// namespace's packets would meet none of them until the first healed. The lock is a listening
// unix socket with an abstract name: abstract names belong to the network namespace, and the
// kernel frees one when its holder exits, also on kill -9 (no stale file to judge). The socket
// is close-on-exec, so a child (a WireGuard helper) never holds it. A second caller learns the
// holder's pid (SO_PEERCRED of a connection to it). Control plane.
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>

#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::net {

class NamespaceLock {
 public:
  // Takes `name` in the caller's network namespace, waiting up to `wait` for a holder that
  // is exiting (its rules are being removed). Failure: held, with the holder's pid
  // ("held by pid 1234"), or the socket's error.
  static common::Result<NamespaceLock, common::Failure> acquire(
      const std::string& name, std::chrono::milliseconds wait = std::chrono::seconds(3));

  // The pid holding `name` in the caller's network namespace; 0: none (or not known).
  static pid_t holder(const std::string& name);

  NamespaceLock(NamespaceLock&&) = default;
  NamespaceLock& operator=(NamespaceLock&&) = default;

 private:
  explicit NamespaceLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace quicstep::net
