#include "server_testbed/migration_policy.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

#include "net/socket_endpoint.hpp"

namespace quicstep::server_testbed {
namespace {

sockaddr_storage v4(const char* ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  sockaddr_storage s{};
  std::memcpy(&s, &a, sizeof(a));
  return s;
}

sockaddr_storage v6(const char* ip, std::uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  sockaddr_storage s{};
  std::memcpy(&s, &a, sizeof(a));
  return s;
}

TEST(MigrationPolicy, ParsesItsNames) {
  for (auto p : {MigrationPolicy::full, MigrationPolicy::port_only, MigrationPolicy::none,
                 MigrationPolicy::stale_path}) {
    EXPECT_EQ(parse_migration_policy(to_string(p)), p);
  }
  EXPECT_FALSE(parse_migration_policy("Full"));
  EXPECT_FALSE(parse_migration_policy(""));
  EXPECT_FALSE(parse_migration_policy("port_only"));
}

TEST(MigrationPolicy, AcceptTable) {
  const auto orig = v4("198.18.210.2", 40000);
  const auto new_port = v4("198.18.210.2", 40001);
  const auto new_addr = v4("198.18.210.3", 40000);
  const auto other_family = v6("2001:db8:210::2", 40000);
  struct Row { MigrationPolicy p; bool port, addr, family; };
  for (const Row& r : {Row{MigrationPolicy::full, true, true, true},
                       Row{MigrationPolicy::stale_path, true, true, true},
                       Row{MigrationPolicy::port_only, true, false, false},
                       Row{MigrationPolicy::none, false, false, false}}) {
    EXPECT_TRUE(accept_packet_from(r.p, orig, orig)) << to_string(r.p);
    EXPECT_EQ(accept_packet_from(r.p, orig, new_port), r.port) << to_string(r.p);
    EXPECT_EQ(accept_packet_from(r.p, orig, new_addr), r.addr) << to_string(r.p);
    EXPECT_EQ(accept_packet_from(r.p, orig, other_family), r.family) << to_string(r.p);
  }
}

TEST(MigrationPolicy, SendAddressAndTransportParameter) {
  const auto orig = v6("2001:db8:210::2", 1);
  const auto moved = v6("2001:db8:210::3", 2);
  EXPECT_TRUE(net::same_endpoint(send_address(MigrationPolicy::stale_path, orig, moved), orig));
  EXPECT_TRUE(net::same_endpoint(send_address(MigrationPolicy::full, orig, moved), moved));
  EXPECT_TRUE(net::same_endpoint(send_address(MigrationPolicy::port_only, orig, moved), moved));
  EXPECT_TRUE(disables_active_migration(MigrationPolicy::none));
  EXPECT_FALSE(disables_active_migration(MigrationPolicy::full));
  EXPECT_FALSE(net::same_ip(orig, moved));
  EXPECT_TRUE(net::same_ip(v4("198.18.210.2", 1), v4("198.18.210.2", 2)));
  EXPECT_FALSE(net::same_endpoint(v4("198.18.210.2", 1), v4("198.18.210.2", 2)));
}

}  // namespace
}  // namespace quicstep::server_testbed
