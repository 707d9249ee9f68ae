// in_private_netns: runs a test body against the kernel in a child process that has a
// network namespace of its own (root only: callers skip otherwise). The child reports its
// failures through a pipe. tx_packets: what such a body reads to tell where a packet left.
#pragma once

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "net/process.hpp"

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

// Packets device `dev` has sent (`ip -j -s link show`: netlink, this namespace); -1 when it
// cannot be read.
inline long tx_packets(const std::string& dev) {
  auto r = net::run_process({"ip", "-j", "-s", "link", "show", "dev", dev});
  if (!r.ok()) return -1;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  if (!j.is_array() || j.empty()) return -1;
  return j[0]["stats64"]["tx"]["packets"].get<long>();
}

}  // namespace quicstep::client::kernel
