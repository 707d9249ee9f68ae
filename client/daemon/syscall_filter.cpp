#include "client/daemon/syscall_filter.hpp"

#include <seccomp.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "client/daemon/syscall_allowlist.hpp"

namespace quicstep::client::daemon {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct ReleaseFilter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

std::string seccomp_error(const char* what, int rc) {
  return std::string(what) + ": " + std::strerror(rc < 0 ? -rc : rc);
}

}  // namespace

common::Result<SyscallFilterInstalled, common::Failure> install_syscall_filter(
    const std::vector<std::string>& extra) {
  std::unique_ptr<void, ReleaseFilter> ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (!ctx) return common::Failure("seccomp_init failed");
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc != 0) {
    return common::Failure(seccomp_error("seccomp TSYNC", rc));
  }
  SyscallFilterInstalled out;
  std::vector<std::string> names(std::begin(kSyscallAllowlist), std::end(kSyscallAllowlist));
  names.insert(names.end(), extra.begin(), extra.end());
  if (kSanitized) names.emplace_back("ptrace");
  for (const std::string& name : names) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) {
      ++out.not_here;
      continue;
    }
    const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0);
    if (rc == 0) {
      ++out.allowed;
    } else if (rc == -EDOM || rc == -EINVAL) {
      ++out.not_here;  // a pseudo number: no such call on this architecture
    } else {
      return common::Failure(seccomp_error(("seccomp allow " + name).c_str(), rc));
    }
  }
  if (int rc = seccomp_load(ctx.get()); rc != 0) {
    return common::Failure(seccomp_error("seccomp_load", rc));
  }
  return out;
}

}  // namespace quicstep::client::daemon
