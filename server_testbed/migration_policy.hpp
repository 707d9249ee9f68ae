// The migration behaviours quicstep-server can stand for (what the QUICstep paper met on
// real servers), as pure functions of addresses, so they are testable without sockets.
//   full        port and address migration accepted (ngtcp2's own behaviour)
//   port-only   a packet from a new IP address is ignored; a new port on the same IP is fine
//   none        disable_active_migration is sent, and any packet from a new path is ignored
//   stale-path  everything is accepted, but answers keep going to the original address
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string_view>

namespace quicstep::server_testbed {

enum class MigrationPolicy { full, port_only, none, stale_path };

// "full", "port-only", "none", "stale-path"; nullopt for anything else.
std::optional<MigrationPolicy> parse_migration_policy(std::string_view text);
std::string_view to_string(MigrationPolicy policy);

// Whether a packet of an established connection from `from` goes to ngtcp2, given the
// address the connection was accepted from. Both are AF_INET or AF_INET6 sockaddrs.
bool accept_packet_from(MigrationPolicy policy, const sockaddr_storage& original,
                        const sockaddr_storage& from);

// Whether the transport parameters carry disable_active_migration.
bool disables_active_migration(MigrationPolicy policy);

// Where a packet ngtcp2 addressed to `path_remote` is sent.
const sockaddr_storage& send_address(MigrationPolicy policy, const sockaddr_storage& original,
                                     const sockaddr_storage& path_remote);

}  // namespace quicstep::server_testbed
