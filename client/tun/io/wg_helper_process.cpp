#include "client/tun/io/wg_helper_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace quicstep::client::tun {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// A close-on-exec duplicate numbered 10 or more, so that placing the child's fds at 3 and 4
// cannot overwrite one with the other.
int high_fd(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 10); }

bool wait_exit(pid_t pid, int ms, int* status) {
  for (int waited = 0; waited <= ms; waited += 10) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    usleep(10'000);
  }
  return false;
}

}  // namespace

common::Result<WgHelperProcess, common::Failure> WgHelperProcess::start(
    const WgHelperOptions& options, const std::string& uapi_set) {
  int packets[2];
  int uapi[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, packets) != 0) {
    return common::Failure(errno_text("socketpair(SOCK_SEQPACKET)"));
  }
  WgHelperProcess p;
  p.packets_.reset(packets[0]);
  net::UniqueFd child3(packets[1]);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, uapi) != 0) {
    return common::Failure(errno_text("socketpair(SOCK_STREAM)"));
  }
  p.uapi_.reset(uapi[0]);
  net::UniqueFd child4(uapi[1]);
  net::UniqueFd moved3(high_fd(child3.get()));
  net::UniqueFd moved4(high_fd(child4.get()));

  std::vector<std::string> args{options.path};
  args.insert(args.end(), options.protect.begin(), options.protect.end());
  args.push_back("--mtu");
  args.push_back(std::to_string(options.mtu));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!options.log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, options.log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
  }
  posix_spawn_file_actions_adddup2(&actions, moved3.get(), 3);
  posix_spawn_file_actions_adddup2(&actions, moved4.get(), 4);
  const int rc = posix_spawn(&p.pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  // The child's ends close here, so that the helper's death reads as its ends closing.
  child3.reset();
  child4.reset();
  moved3.reset();
  moved4.reset();
  if (rc != 0) {
    p.pid_ = -1;
    return common::Failure("start " + options.path + ": " + std::strerror(rc));
  }
  auto answer = p.uapi(uapi_set);
  if (!answer.ok()) return answer.error();
  if (answer->rfind("errno=0\n", 0) != 0) {
    return common::Failure("the WireGuard helper refused the configuration: " + *answer);
  }
  return p;
}

WgHelperProcess::WgHelperProcess(WgHelperProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      packets_(std::move(other.packets_)),
      uapi_(std::move(other.uapi_)),
      pending_(std::exchange(other.pending_, false)),
      partial_(std::move(other.partial_)) {}

WgHelperProcess& WgHelperProcess::operator=(WgHelperProcess&& other) noexcept {
  if (this != &other) {
    terminate();
    pid_ = std::exchange(other.pid_, -1);
    packets_ = std::move(other.packets_);
    uapi_ = std::move(other.uapi_);
    pending_ = std::exchange(other.pending_, false);
    partial_ = std::move(other.partial_);
  }
  return *this;
}

WgHelperProcess::~WgHelperProcess() { terminate(); }

void WgHelperProcess::terminate() {
  if (pid_ <= 0) return;
  packets_.reset();
  uapi_.reset();
  int status = 0;
  if (!wait_exit(pid_, 0, &status)) {
    kill(pid_, SIGTERM);
    if (!wait_exit(pid_, 2000, &status)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  pid_ = -1;
}

namespace {

// Sends all of `request` on the UAPI stream.
common::Outcome send_all(int fd, const std::string& request) {
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) return common::Failure(errno_text("UAPI write"));
    sent += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

common::Failure WgHelperProcess::closed_failure(int wait_ms) {
  int status = 0;
  const bool exited = wait_exit(pid_, wait_ms, &status);
  if (exited) pid_ = -1;
  return common::Failure(
      "the WireGuard helper closed its UAPI end" +
      (exited && WIFEXITED(status) ? " (exit " + std::to_string(WEXITSTATUS(status)) + ")"
                                   : std::string()));
}

common::Result<std::string, common::Failure> WgHelperProcess::read_answer(int timeout_ms) {
  char buf[4096];
  while (partial_.find("\n\n") == std::string::npos) {
    pollfd p{uapi_.get(), POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) {
      return common::Failure("the WireGuard helper did not answer in 5 s");
    }
    const ssize_t n = ::recv(uapi_.get(), buf, sizeof buf, 0);
    if (n <= 0) return closed_failure(1000);
    partial_.append(buf, static_cast<std::size_t>(n));
  }
  std::string answer = std::move(partial_);
  partial_.clear();
  pending_ = false;
  return answer;
}

common::Result<std::string, common::Failure> WgHelperProcess::uapi(const std::string& request) {
  if (pending_) {
    // The loop's reading goes first on the stream: its answer is read and dropped.
    if (auto earlier = read_answer(5000); !earlier.ok()) return earlier.error();
  }
  if (auto sent = send_all(uapi_.get(), request); !sent.ok()) return sent.error();
  return read_answer(5000);
}

common::Outcome WgHelperProcess::begin_uapi(const std::string& request) {
  if (pending_) return common::Failure("a UAPI request is pending");
  if (auto sent = send_all(uapi_.get(), request); !sent.ok()) return sent;
  pending_ = true;
  partial_.clear();
  return {};
}

std::optional<common::Result<std::string, common::Failure>> WgHelperProcess::poll_uapi() {
  if (!pending_) return std::nullopt;
  char buf[4096];
  while (partial_.find("\n\n") == std::string::npos) {
    const ssize_t n = ::recv(uapi_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return std::nullopt;
    if (n <= 0) {
      pending_ = false;
      // In the loop: no wait for its exit (the runner reaps it when the packet pair closes).
      return common::Result<std::string, common::Failure>(closed_failure(0));
    }
    partial_.append(buf, static_cast<std::size_t>(n));
  }
  std::string answer = std::move(partial_);
  partial_.clear();
  pending_ = false;
  return common::Result<std::string, common::Failure>(std::move(answer));
}

}  // namespace quicstep::client::tun
