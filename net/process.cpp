#include "net/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace quicstep::net {
namespace {

// Closes the fds it owns.
struct Pipe {
  int fd[2] = {-1, -1};
  bool open() { return pipe2(fd, O_CLOEXEC) == 0; }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  ~Pipe() { close_end(0), close_end(1); }
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text) {
  ProcessResult r;
  Pipe in, out;
  if (argv.empty() || !in.open() || !out.open()) {
    r.output = "cannot start: " + std::string(argv.empty() ? "no program" : strerror(errno));
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int err = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  in.close_end(0);
  out.close_end(1);
  if (err != 0) {
    r.output = "cannot start " + argv[0] + ": " + strerror(err);
    return r;
  }
  // Control-plane inputs are small (< pipe capacity in practice); write, then read.
  std::size_t off = 0;
  while (off < stdin_text.size()) {
    ssize_t n = ::write(in.fd[1], stdin_text.data() + off, stdin_text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  in.close_end(1);
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(out.fd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (r.output.size() < 65536) r.output.append(buf, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string describe(const std::vector<std::string>& argv, const ProcessResult& r) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  s += " (status " + std::to_string(r.status) + ")";
  if (!r.output.empty()) s += ": " + r.output;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace quicstep::net
