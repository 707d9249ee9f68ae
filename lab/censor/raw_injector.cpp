#include "lab/censor/raw_injector.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace quicstep::censor {

RawInjector::~RawInjector() {
  if (fd4_ >= 0) close(fd4_);
  if (fd6_ >= 0) close(fd6_);
}

common::Outcome RawInjector::open() {
  fd4_ = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_RAW);
  if (fd4_ < 0) {
    return common::Failure(std::string("socket(AF_INET, SOCK_RAW): ") + strerror(errno));
  }
  const int one = 1;
  if (setsockopt(fd4_, IPPROTO_IP, IP_HDRINCL, &one, sizeof one) < 0) {
    return common::Failure(std::string("IP_HDRINCL: ") + strerror(errno));
  }
  fd6_ = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_RAW);
  if (fd6_ < 0) {
    return common::Failure(std::string("socket(AF_INET6, SOCK_RAW): ") + strerror(errno));
  }
  return {};
}

bool RawInjector::send(common::Bytes p) {
  ssize_t n = -1;
  if (p.size() >= 20 && (p[0] >> 4) == 4 && fd4_ >= 0) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    std::memcpy(&to.sin_addr, p.data() + 16, 4);
    n = sendto(fd4_, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  } else if (p.size() >= 40 && (p[0] >> 4) == 6 && fd6_ >= 0) {
    sockaddr_in6 to{};
    to.sin6_family = AF_INET6;
    std::memcpy(&to.sin6_addr, p.data() + 24, 16);
    n = sendto(fd6_, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }
  if (n != static_cast<ssize_t>(p.size())) {
    ++errors_;
    return false;
  }
  ++sent_;
  return true;
}

}  // namespace quicstep::censor
