#include "server_testbed/migration_policy.hpp"

#include "net/socket_endpoint.hpp"

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

bool accept_packet_from(MigrationPolicy policy, const sockaddr_storage& original,
                        const sockaddr_storage& from) {
  switch (policy) {
    case MigrationPolicy::full:
    case MigrationPolicy::stale_path: return true;
    case MigrationPolicy::port_only: return net::same_ip(original, from);
    case MigrationPolicy::none: return net::same_endpoint(original, from);
  }
  return false;
}

bool disables_active_migration(MigrationPolicy policy) { return policy == MigrationPolicy::none; }

const sockaddr_storage& send_address(MigrationPolicy policy, const sockaddr_storage& original,
                                     const sockaddr_storage& path_remote) {
  return policy == MigrationPolicy::stale_path ? original : path_remote;
}

}  // namespace quicstep::server_testbed
