// The daemon's system-call allow-list (docs/DESIGN.md "Hardening"): once its setup is done
// (rules, routes, the channel, the guard's BPF programs loaded), quicstepd installs a seccomp
// filter (libseccomp) that lets through only the calls a system service makes
// (syscall_allowlist.hpp: systemd's @system-service, as the units' SystemCallFilter, and
// bpf); any other call fails with EPERM instead of running. The filter covers every thread
// (TSYNC) and is inherited by what the daemon starts (wireguard-go, ip, wg). It is what the
// systemd unit's SystemCallFilter= does, in the daemon itself, so that it holds however the
// daemon is started (a shell, a container, the lab) and the lab suites run under it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace quicstep::client::daemon {

struct SyscallFilterInstalled {
  std::size_t allowed = 0;      // calls allowed on this architecture
  std::size_t not_here = 0;     // names of the list this architecture does not have
};

// Installs the filter on the calling process (all its threads): the allow-list and
// `extra` names. The process gets no_new_privs (which the filter needs without
// CAP_SYS_ADMIN; execve of set-uid programs then gains nothing). Errors: libseccomp's,
// in words. In a sanitizer build ptrace stays allowed (LeakSanitizer stops the threads
// with it at exit).
common::Result<SyscallFilterInstalled, common::Failure> install_syscall_filter(
    const std::vector<std::string>& extra = {});

}  // namespace quicstep::client::daemon
