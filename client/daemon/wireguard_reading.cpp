#include "client/daemon/wireguard_reading.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/process.hpp"

namespace quicstep::client::daemon {
namespace {

common::Failure failure(const std::string& what) {
  return common::Failure(what + ": " + std::strerror(errno));
}

common::Result<WireGuardReading, common::Failure> read_uapi(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return common::Failure(path + ": path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failure("socket");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const timeval timeout{0, 250'000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return failure("connect " + path);
  }
  static constexpr char kGet[] = "get=1\n\n";
  if (::send(fd, kGet, sizeof kGet - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof kGet - 1)) {
    return failure("send to " + path);
  }
  std::string answer;
  char buf[4096];
  // The answer ends with an empty line (after errno=N); wireguard-go then waits for more.
  while (answer.find("\n\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure("receive from " + path);
    if (n == 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
    if (answer.size() > (1u << 20)) return common::Failure(path + ": answer too long");
  }
  return parse_uapi_get(answer);
}

}  // namespace

common::Result<WireGuardReading, common::Failure> read_wireguard(const std::string& interface) {
  const std::string sock = "/var/run/wireguard/" + interface + ".sock";
  if (::access(sock.c_str(), F_OK) == 0) return read_uapi(sock);
  const std::vector<std::string> cmd{"wg", "show", interface, "dump"};
  const auto r = net::run_process(cmd);
  if (!r.ok()) return common::Failure(net::describe(cmd, r));
  return parse_wg_dump(r.output);
}

}  // namespace quicstep::client::daemon
