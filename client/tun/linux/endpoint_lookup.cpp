#include "client/tun/linux/endpoint_lookup.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <sys/stat.h>

#include <array>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <spdlog/spdlog.h>

namespace quicstep::client::tun {

common::Result<common::IpAddress, common::Failure> look_up_endpoint(const std::string& host,
                                                                    int attempts) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_protocol = IPPROTO_UDP;
  hints.ai_flags = AI_ADDRCONFIG;
  for (int attempt = 1;; ++attempt) {
    addrinfo* found = nullptr;
    const int err = getaddrinfo(host.c_str(), nullptr, &hints, &found);
    const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, &freeaddrinfo);
    if (err == 0) {
      for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
          const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
          std::array<std::uint8_t, 4> b{};
          std::memcpy(b.data(), &sin->sin_addr, 4);
          return common::IpAddress::v4(b);
        }
        if (a->ai_family == AF_INET6) {
          const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
          std::array<std::uint8_t, 16> b{};
          std::memcpy(b.data(), &sin6->sin6_addr, 16);
          return common::IpAddress::v6(b);
        }
      }
      return common::Failure("cannot look up " + host + ": no IPv4 or IPv6 address");
    }
    const std::string why = err == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(err);
    if (err != EAI_AGAIN || attempt >= attempts) {
      return common::Failure("cannot look up " + host + ": " + why);
    }
    spdlog::warn("looking up the channel's endpoint {}: {}; trying again in 1 s ({} of {})",
                 host, why, attempt, attempts);
    sleep(1);
  }
}

EndpointCache::EndpointCache(const std::string& device)
    : path("/run/quicstep-tun-" + device + ".endpoints") {}

std::map<std::string, common::IpAddress> EndpointCache::read() const {
  std::map<std::string, common::IpAddress> names;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, text;
    if (!(words >> name >> text)) continue;
    std::array<std::uint8_t, 16> b{};
    if (inet_pton(AF_INET, text.c_str(), b.data()) == 1) {
      names.insert_or_assign(name, common::IpAddress::v4({b[0], b[1], b[2], b[3]}));
    } else if (inet_pton(AF_INET6, text.c_str(), b.data()) == 1) {
      names.insert_or_assign(name, common::IpAddress::v6(b));
    }
  }
  return names;
}

bool EndpointCache::write(const std::map<std::string, common::IpAddress>& names) const {
  const std::string fresh = path + ".new";
  const mode_t old_mask = umask(077);
  {
    std::ofstream out(fresh, std::ios::trunc);
    for (const auto& [name, address] : names) out << name << ' ' << address.to_string() << '\n';
    if (!out.flush()) {
      umask(old_mask);
      unlink(fresh.c_str());
      return false;
    }
  }
  umask(old_mask);
  return rename(fresh.c_str(), path.c_str()) == 0;
}

void EndpointCache::remove() const { unlink(path.c_str()); }

}  // namespace quicstep::client::tun
