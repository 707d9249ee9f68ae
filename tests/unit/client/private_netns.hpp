// in_private_netns: runs a test body against the kernel in a child process that has a
// network namespace of its own (root only: callers skip otherwise). The child reports its
// failures through a pipe.
#pragma once

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace quicstep::client::kernel {

// Runs `body` in a child in a new network namespace; returns what it reported ("" = fine).
inline std::string in_private_netns(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why = unshare(CLONE_NEWNET) == 0 ? body() : "unshare failed";
    if (!why.empty() && write(fds[1], why.data(), why.size()) < 0) _exit(2);
    _exit(why.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (out.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return "child failed";
  return out;
}

}  // namespace quicstep::client::kernel
