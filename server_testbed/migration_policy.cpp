#include "server_testbed/migration_policy.hpp"

#include <netinet/in.h>

#include <cstring>

namespace quicstep::server_testbed {

std::optional<MigrationPolicy> parse_migration_policy(std::string_view text) {
  if (text == "full") return MigrationPolicy::full;
  if (text == "port-only") return MigrationPolicy::port_only;
  if (text == "none") return MigrationPolicy::none;
  if (text == "stale-path") return MigrationPolicy::stale_path;
  return std::nullopt;
}

std::string_view to_string(MigrationPolicy policy) {
  switch (policy) {
    case MigrationPolicy::full: return "full";
    case MigrationPolicy::port_only: return "port-only";
    case MigrationPolicy::none: return "none";
    case MigrationPolicy::stale_path: return "stale-path";
  }
  return "?";
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

static std::uint16_t port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    sockaddr_in x{};
    std::memcpy(&x, &a, sizeof(x));
    return x.sin_port;
  }
  sockaddr_in6 x{};
  std::memcpy(&x, &a, sizeof(x));
  return x.sin6_port;
}

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  return same_ip(a, b) && port_of(a) == port_of(b);
}

bool accept_packet_from(MigrationPolicy policy, const sockaddr_storage& original,
                        const sockaddr_storage& from) {
  switch (policy) {
    case MigrationPolicy::full:
    case MigrationPolicy::stale_path: return true;
    case MigrationPolicy::port_only: return same_ip(original, from);
    case MigrationPolicy::none: return same_endpoint(original, from);
  }
  return false;
}

bool disables_active_migration(MigrationPolicy policy) { return policy == MigrationPolicy::none; }

const sockaddr_storage& send_address(MigrationPolicy policy, const sockaddr_storage& original,
                                     const sockaddr_storage& path_remote) {
  return policy == MigrationPolicy::stale_path ? original : path_remote;
}

}  // namespace quicstep::server_testbed
