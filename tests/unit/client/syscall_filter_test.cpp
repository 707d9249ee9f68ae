// The daemon's system-call filter, installed in a forked child (a filter cannot be taken
// off): a call outside the allow-list fails with EPERM, the calls the daemon lives on still
// work, threads started before it are covered too, and a program the daemon starts
// afterwards runs under it. The refused call is mount(2) with null arguments: as root it
// fails with EFAULT or EINVAL without the filter, so EPERM can only come from the filter.
#include "client/daemon/syscall_filter.hpp"

#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <thread>

namespace quicstep::client::daemon {
namespace {

// Runs `body` in a forked child; its exit code (a failed check exits with its line).
int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int mount_errno() {
  errno = 0;
  return syscall(SYS_mount, nullptr, nullptr, nullptr, 0, nullptr) == 0 ? 0 : errno;
}

class SyscallFilter : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "root only (as root, mount(2) without the filter is not EPERM)";
  }
};

TEST_F(SyscallFilter, WithoutItMountIsNotRefusedForPermission) {
  EXPECT_NE(in_child([] { return mount_errno(); }), EPERM);
}

TEST_F(SyscallFilter, AFilteredCallFailsWithEpermAndTheDaemonsCallsStillWork) {
  EXPECT_EQ(in_child([] {
              auto installed = install_syscall_filter();
              if (!installed.ok()) return 10;
              if (installed->allowed < 250) return 11;  // the list, resolved on this arch
              if (mount_errno() != EPERM) return 12;
              const int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);  // rules, routes
              if (s < 0) return 13;
              close(s);
              const int u = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
              if (u < 0) return 14;
              close(u);
              return 0;
            }),
            0);
}

TEST_F(SyscallFilter, ThreadsStartedBeforeAreCoveredToo) {
  EXPECT_EQ(in_child([] {
              std::atomic<int> phase{0};
              int seen = -1;
              std::thread t([&] {
                while (phase.load() == 0) std::this_thread::yield();
                seen = mount_errno();
                phase = 2;
              });
              if (!install_syscall_filter().ok()) return 20;
              phase = 1;
              t.join();
              return seen == EPERM ? 0 : 21;
            }),
            0);
}

TEST_F(SyscallFilter, ProgramsStartedAfterwardRunUnderIt) {
  EXPECT_EQ(in_child([] {
              if (!install_syscall_filter().ok()) return 30;
              // A shell that reads its own filter mode: 2 = a seccomp filter.
              const pid_t pid = fork();
              if (pid == 0) {
                execl("/bin/sh", "sh", "-c",
                      "grep -q '^Seccomp:[[:space:]]*2' /proc/self/status", nullptr);
                _exit(127);
              }
              int status = 0;
              waitpid(pid, &status, 0);
              return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 31;
            }),
            0);
}

TEST_F(SyscallFilter, ExtraNamesAreAllowedAndUnknownOnesAreCounted) {
  EXPECT_EQ(in_child([] {
              auto installed = install_syscall_filter({"mount", "no_such_call_qs"});
              if (!installed.ok()) return 40;
              if (installed->not_here < 1) return 41;
              return mount_errno() != EPERM ? 0 : 42;
            }),
            0);
}

}  // namespace
}  // namespace quicstep::client::daemon
