#include "net/socket_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace quicstep::net {
namespace {

std::uint16_t port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    sockaddr_in x{};
    std::memcpy(&x, &a, sizeof(x));
    return x.sin_port;
  }
  sockaddr_in6 x{};
  std::memcpy(&x, &a, sizeof(x));
  return x.sin6_port;
}

}  // namespace

std::optional<sockaddr_storage> parse_ip(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  sockaddr_storage out{};
  sockaddr_in a4{};
  sockaddr_in6 a6{};
  if (inet_pton(AF_INET, s.c_str(), &a4.sin_addr) == 1) {
    a4.sin_family = AF_INET;
    std::memcpy(&out, &a4, sizeof(a4));
    return out;
  }
  if (inet_pton(AF_INET6, s.c_str(), &a6.sin6_addr) == 1) {
    a6.sin6_family = AF_INET6;
    std::memcpy(&out, &a6, sizeof(a6));
    return out;
  }
  return std::nullopt;
}

sockaddr_storage with_port(sockaddr_storage addr, std::uint16_t port) {
  if (addr.ss_family == AF_INET) {
    sockaddr_in a{};
    std::memcpy(&a, &addr, sizeof(a));
    a.sin_port = htons(port);
    std::memcpy(&addr, &a, sizeof(a));
  } else {
    sockaddr_in6 a{};
    std::memcpy(&a, &addr, sizeof(a));
    a.sin6_port = htons(port);
    std::memcpy(&addr, &a, sizeof(a));
  }
  return addr;
}

std::optional<sockaddr_storage> parse_endpoint(std::string_view text,
                                               std::uint16_t default_port) {
  std::string_view host = text;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
      if (port_text.empty()) return std::nullopt;
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const auto colon = text.find(':');
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (port_text.empty()) return std::nullopt;
  }
  auto addr = parse_ip(host);
  if (!addr) return std::nullopt;
  std::uint16_t port = default_port;
  if (!port_text.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(),
                                           value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      return std::nullopt;
    }
    port = static_cast<std::uint16_t>(value);
  }
  return with_port(*addr, port);
}

sockaddr_storage wildcard(int family) {
  sockaddr_storage out{};
  out.ss_family = static_cast<sa_family_t>(family);
  return out;
}

std::string ip_text(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    sockaddr_in a{};
    std::memcpy(&a, &addr, sizeof(a));
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
  } else {
    sockaddr_in6 a{};
    std::memcpy(&a, &addr, sizeof(a));
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
  }
  return text;
}

socklen_t sockaddr_len(const sockaddr_storage& addr) {
  return addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string to_string(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  std::uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    sockaddr_in a{};
    std::memcpy(&a, &addr, sizeof(a));
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
    port = ntohs(a.sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  sockaddr_in6 a{};
  std::memcpy(&a, &addr, sizeof(a));
  inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof(host));
  port = ntohs(a.sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

bool same_ip(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    sockaddr_in x{}, y{};
    std::memcpy(&x, &a, sizeof(x));
    std::memcpy(&y, &b, sizeof(y));
    return x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    sockaddr_in6 x{}, y{};
    std::memcpy(&x, &a, sizeof(x));
    std::memcpy(&y, &b, sizeof(y));
    return std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  return same_ip(a, b) && port_of(a) == port_of(b);
}

}  // namespace quicstep::net
