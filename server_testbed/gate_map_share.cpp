#include "server_testbed/gate_map_share.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace quicstep::server_testbed {

namespace {

common::Outcome make_addr(const std::string& path, sockaddr_un* addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return common::Failure(path + ": path too long");
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return {};
}

constexpr std::size_t kFds = 3;

}  // namespace

MapShare::Started MapShare::start(const std::string& path, GateMapFds fds) {
  sockaddr_un addr{};
  if (auto made = make_addr(path, &addr); !made) return made.error();
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  unlink(path.c_str());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 8) != 0) {
    common::Failure failure(path + ": " + std::strerror(errno));
    if (fd >= 0) close(fd);
    return failure;
  }
  return std::unique_ptr<MapShare>(new MapShare(path, fd, fds));
}

MapShare::MapShare(std::string path, int listen_fd, GateMapFds fds)
    : path_(std::move(path)), listen_fd_(listen_fd), fds_(fds), thread_([this] { serve(); }) {}

MapShare::~MapShare() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
  unlink(path_.c_str());
}

void MapShare::serve() {
  while (!stop_.load()) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int fds[kFds] = {fds_.sockets, fds_.config, fds_.allow};
    char control[CMSG_SPACE(sizeof(fds))] = {};
    char byte = 'M';
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    std::memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    sendmsg(client, &msg, MSG_NOSIGNAL);
    close(client);
  }
}

common::Outcome receive_gate_maps(const std::string& path, GateMapFds* out) {
  sockaddr_un addr{};
  if (auto made = make_addr(path, &addr); !made) return made;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    common::Failure failure(path + ": " + std::strerror(errno));
    if (fd >= 0) close(fd);
    return failure;
  }
  int fds[kFds] = {-1, -1, -1};
  char control[CMSG_SPACE(sizeof(fds))] = {};
  char byte = 0;
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  close(fd);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (n != 1 || cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS ||
      cmsg->cmsg_len != CMSG_LEN(sizeof(fds))) {
    return common::Failure(path + ": no map fds received");
  }
  std::memcpy(fds, CMSG_DATA(cmsg), sizeof(fds));
  *out = GateMapFds{fds[0], fds[1], fds[2]};
  return {};
}

}  // namespace quicstep::server_testbed
