#include "common/socket_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace quicstep::common {

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

}  // namespace quicstep::common
