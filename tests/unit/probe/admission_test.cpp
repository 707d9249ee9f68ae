#include "measurement/probe/admission.hpp"

#include <gtest/gtest.h>

#include "net/socket_endpoint.hpp"

namespace quicstep::measurement::probe {

using net::parse_endpoint;
using net::parse_ip;
using net::ip_text;
namespace {

constexpr std::uint64_t kSecond = 1'000'000'000;

TEST(TokenBucket, Unlimited) {
  TokenBucket b(0, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(b.take(0));
}

TEST(TokenBucket, RateOverSimulatedTime) {
  TokenBucket b(100, 5);  // 100/s, burst 5
  std::uint64_t now = 10 * kSecond;
  int taken = 0;
  for (int i = 0; i < 10; ++i) taken += b.take(now) ? 1 : 0;
  EXPECT_EQ(taken, 5);  // the burst
  EXPECT_EQ(b.next_available(now), now + kSecond / 100 + 1);
  // Over one simulated second, ~100 more.
  taken = 0;
  for (std::uint64_t t = now; t <= now + kSecond; t += kSecond / 1000) taken += b.take(t) ? 1 : 0;
  EXPECT_GE(taken, 99);
  EXPECT_LE(taken, 101);
}

TEST(PrefixLimiter, PerSlash24AndSlash48) {
  PrefixLimiter l(2);
  const auto a = *parse_ip("198.18.1.1"), b = *parse_ip("198.18.1.200"), c = *parse_ip("198.18.2.1");
  EXPECT_TRUE(l.try_acquire(a));
  EXPECT_TRUE(l.try_acquire(b));
  EXPECT_FALSE(l.try_acquire(a));  // same /24, full
  EXPECT_TRUE(l.try_acquire(c));   // another /24
  l.release(b);
  EXPECT_TRUE(l.try_acquire(a));
  EXPECT_EQ(l.in_use(a), 2u);
  const auto x = *parse_ip("2001:db8:1::1"), y = *parse_ip("2001:db8:1:ffff::1"),
             z = *parse_ip("2001:db8:2::1");
  EXPECT_EQ(PrefixLimiter::prefix_key(x), PrefixLimiter::prefix_key(y));
  EXPECT_NE(PrefixLimiter::prefix_key(x), PrefixLimiter::prefix_key(z));
  EXPECT_NE(PrefixLimiter::prefix_key(a), PrefixLimiter::prefix_key(x));
  EXPECT_TRUE(l.try_acquire(x));
  EXPECT_TRUE(l.try_acquire(y));
  EXPECT_FALSE(l.try_acquire(x));
}

TEST(PrefixLimiter, Unlimited) {
  PrefixLimiter l(0);
  const auto a = *parse_ip("198.18.1.1");
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(l.try_acquire(a));
}

TEST(Endpoint, Parse) {
  EXPECT_TRUE(net::parse_endpoint("198.18.0.1", 53));
  EXPECT_TRUE(net::parse_endpoint("198.18.0.1:5353", 53));
  EXPECT_TRUE(net::parse_endpoint("2001:db8::1", 53));
  EXPECT_TRUE(net::parse_endpoint("[2001:db8::1]:53", 53));
  EXPECT_FALSE(net::parse_endpoint("198.18.0.1:0", 53));
  EXPECT_FALSE(net::parse_endpoint("198.18.0.1:65536", 53));
  EXPECT_FALSE(net::parse_endpoint("198.18.0.1:53x", 53));
  EXPECT_FALSE(net::parse_endpoint("[2001:db8::1", 53));
  EXPECT_FALSE(net::parse_endpoint("dns.test", 53));
  EXPECT_EQ(net::ip_text(*net::parse_endpoint("[2001:db8::1]:53", 53)), "2001:db8::1");
}

}  // namespace
}  // namespace quicstep::measurement::probe
