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

// One UAPI request on a fresh connection; the answer up to its closing empty line.
common::Result<std::string, common::Failure> uapi_exchange(const std::string& path,
                                                            const std::string& request) {
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
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
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
  return answer;
}

std::string uapi_path(const std::string& interface) {
  return "/var/run/wireguard/" + interface + ".sock";
}

}  // namespace

common::Result<core::WireGuardReading, common::Failure> read_wireguard(const std::string& interface) {
  const std::string sock = uapi_path(interface);
  if (::access(sock.c_str(), F_OK) == 0) {
    auto answer = uapi_exchange(sock, "get=1\n\n");
    if (!answer) return answer.error();
    return core::parse_uapi_get(*answer);
  }
  const std::vector<std::string> cmd{"wg", "show", interface, "dump"};
  const auto r = net::run_process(cmd);
  if (!r.ok()) return common::Failure(net::describe(cmd, r));
  return core::parse_wg_dump(r.output);
}

common::Result<bool, common::Failure> rebind_wireguard(const std::string& interface) {
  const std::string sock = uapi_path(interface);
  if (::access(sock.c_str(), F_OK) != 0) return false;
  auto answer = uapi_exchange(sock, "get=1\n\n");
  if (!answer) return answer.error();
  std::string port;
  for (std::size_t at = 0; at < answer->size();) {
    const std::size_t nl = answer->find('\n', at);
    const std::string line = answer->substr(at, nl == std::string::npos ? nl : nl - at);
    if (line.rfind("listen_port=", 0) == 0) port = line.substr(12);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  if (port.empty()) return common::Failure(sock + ": no listen_port in its answer");
  auto set = uapi_exchange(sock, "set=1\nlisten_port=" + port + "\n\n");
  if (!set) return set.error();
  if (set->find("errno=0") == std::string::npos) {
    return common::Failure(sock + ": listen_port=" + port + " refused: " + *set);
  }
  return true;
}

}  // namespace quicstep::client::daemon
