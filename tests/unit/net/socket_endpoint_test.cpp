// Socket addresses from the command line: whole string consumed, ports in range, and the
// comparisons the server's migration policy and the clients' path choice rest on.
#include "net/socket_endpoint.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>

namespace quicstep::net {
namespace {

TEST(SocketEndpoint, ParsesAddressesWithAndWithoutPort) {
  auto a = parse_endpoint("198.18.0.1", 443);
  ASSERT_TRUE(a);
  EXPECT_EQ(to_string(*a), "198.18.0.1:443");
  auto b = parse_endpoint("198.18.0.1:8443", 443);
  ASSERT_TRUE(b);
  EXPECT_EQ(to_string(*b), "198.18.0.1:8443");
  auto c = parse_endpoint("[2001:db8::1]:4433", 443);
  ASSERT_TRUE(c);
  EXPECT_EQ(to_string(*c), "[2001:db8::1]:4433");
  auto d = parse_endpoint("2001:db8::1", 443);
  ASSERT_TRUE(d);
  EXPECT_EQ(to_string(*d), "[2001:db8::1]:443");
  EXPECT_EQ(ip_text(*d), "2001:db8::1");
  EXPECT_EQ(sockaddr_len(*a), sizeof(sockaddr_in));
  EXPECT_EQ(sockaddr_len(*d), sizeof(sockaddr_in6));
}

TEST(SocketEndpoint, RefusesWhatIsNotWhole) {
  for (const char* bad : {"", "198.18.0.1:", "198.18.0.1:0", "198.18.0.1:65536",
                          "198.18.0.1:44x", "[2001:db8::1]x", "[2001:db8::1]:", "[2001:db8::1",
                          "example.test", "198.18.0.256"}) {
    EXPECT_FALSE(parse_endpoint(bad, 443)) << bad;
  }
  EXPECT_TRUE(parse_endpoint("[2001:db8::1]", 443));  // brackets without a port
  EXPECT_FALSE(parse_ip("198.18.0.1:443"));
}

TEST(SocketEndpoint, SameIpAndSameEndpoint) {
  const auto a = *parse_endpoint("198.18.0.1:1000", 443);
  const auto b = *parse_endpoint("198.18.0.1:2000", 443);
  const auto c = *parse_endpoint("198.18.0.2:1000", 443);
  EXPECT_TRUE(same_ip(a, b));
  EXPECT_FALSE(same_endpoint(a, b));
  EXPECT_FALSE(same_ip(a, c));
  EXPECT_TRUE(same_endpoint(a, with_port(b, 1000)));
  EXPECT_FALSE(same_ip(a, *parse_endpoint("[::ffff:198.18.0.1]:1000", 443)));
}

}  // namespace
}  // namespace quicstep::net
