// The TUN engine's DNS through the channel: a query into the channel goes to the channel's
// resolver, its answer comes back from the address asked; each rewritten packet is compared
// byte for byte with the packet built afresh with the other address, so the IPv4 header and
// UDP/TCP checksums are checked against the builder's own checksum code.
#include "client/tun/channel_dns.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <array>
#include <span>
#include <string>
#include <tuple>

#include "support/packet_builder.hpp"

namespace quicstep::client::tun {
namespace {

using test::ByteVec;
using test::PacketBuilder;

constexpr const char* kApp4 = "198.19.255.2";  // the TUN's (tunnel) address
constexpr const char* kApp6 = "2001:db8:ffff::2";
constexpr const char* kRouter4 = "192.168.1.1";  // the host's resolver
constexpr const char* kRouter6 = "fd00:1::1";
constexpr const char* kResolver4 = "10.64.0.1";  // the channel's (the wg-quick DNS line)
constexpr const char* kResolver6 = "fc00:bbbb::1";

constexpr const char* kNative4 = "192.168.1.20";  // the native link's, a socket named it
constexpr const char* kNative6 = "fd00:1::20";

common::IpAddress address(const char* text) {
  std::array<std::uint8_t, 16> b{};
  if (inet_pton(AF_INET, text, b.data()) == 1) return common::IpAddress::v4({b[0], b[1], b[2], b[3]});
  inet_pton(AF_INET6, text, b.data());
  return common::IpAddress::v6(b);
}

ChannelDns both(std::size_t capacity = 64) {
  return ChannelDns(address(kResolver4), address(kResolver6), capacity);
}

// With the tunnel's addresses: queries from another source leave from them.
ChannelDns with_tunnel(bool resolvers) {
  return ChannelDns(resolvers ? std::optional(address(kResolver4)) : std::nullopt,
                    resolvers ? std::optional(address(kResolver6)) : std::nullopt, 64, 0,
                    TunnelAddresses{address(kApp4), address(kApp6)});
}

ByteVec udp(const char* src, const char* dst, std::uint16_t sport, std::uint16_t dport,
            std::string_view payload = "query") {
  PacketBuilder b;
  if (std::string_view(src).find(':') == std::string_view::npos) {
    b.ipv4(src, dst);
  } else {
    b.ipv6(src, dst);
  }
  return b.udp(sport, dport).payload(payload).build();
}

ByteVec tcp(const char* src, const char* dst, std::uint16_t sport, std::uint16_t dport) {
  PacketBuilder b;
  if (std::string_view(src).find(':') == std::string_view::npos) {
    b.ipv4(src, dst);
  } else {
    b.ipv6(src, dst);
  }
  return b.tcp(sport, dport).seq(7).payload("\x00\x05query").build();
}

// A query, what it must become in the channel, an answer from the channel, and what it must
// become in the TUN.
struct RoundTrip {
  ByteVec query, sent, answer, renamed;
};

void expect_round_trips(ChannelDns& dns, std::span<const RoundTrip> cases) {
  for (const RoundTrip& c : cases) {
    ByteVec p = c.query;
    EXPECT_TRUE(dns.to_channel(p));
    EXPECT_EQ(p, c.sent);
    p = c.answer;
    EXPECT_TRUE(dns.from_channel(p));
    EXPECT_EQ(p, c.renamed);
  }
}

TEST(ChannelDns, AQueryGoesToTheResolverAndItsAnswerComesBackFromTheAddressAsked) {
  ChannelDns dns = both();
  const RoundTrip cases[] = {
      {udp(kApp4, kRouter4, 40000, 53), udp(kApp4, kResolver4, 40000, 53),
       udp(kResolver4, kApp4, 53, 40000, "answer"), udp(kRouter4, kApp4, 53, 40000, "answer")},
      {udp(kApp6, kRouter6, 40001, 53), udp(kApp6, kResolver6, 40001, 53),
       udp(kResolver6, kApp6, 53, 40001, "answer"), udp(kRouter6, kApp6, 53, 40001, "answer")},
      {tcp(kApp4, kRouter4, 40002, 53), tcp(kApp4, kResolver4, 40002, 53),
       tcp(kResolver4, kApp4, 53, 40002), tcp(kRouter4, kApp4, 53, 40002)},
      {tcp(kApp6, kRouter6, 40003, 53), tcp(kApp6, kResolver6, 40003, 53),
       tcp(kResolver6, kApp6, 53, 40003), tcp(kRouter6, kApp6, 53, 40003)},
  };
  expect_round_trips(dns, cases);
  EXPECT_EQ(dns.redirected(), 4u);
  EXPECT_EQ(dns.answered(), 4u);
}

TEST(ChannelDns, LeavesAloneWhatIsNotAQueryIntoTheChannelOrItsAnswer) {
  ChannelDns v4_only(address(kResolver4), std::nullopt, 64);
  const ByteVec untouched[] = {
      udp(kApp6, kRouter6, 40000, 53),                        // a family without a resolver
      udp(kApp4, kRouter4, 40000, 443),                       // not DNS
      udp(kApp4, kRouter4, 53, 40000),                        // from port 53, not to it
      PacketBuilder().ipv4(kApp4, kRouter4).fragment(0, true, 9).udp(40000, 53)
          .payload("a fragmented query").build(),              // fragmented: left as it is
      ByteVec{0x45, 0, 0},                                     // not a packet
  };
  for (const ByteVec& original : untouched) {
    ByteVec p = original;
    EXPECT_FALSE(v4_only.to_channel(p));
    EXPECT_EQ(p, original);
  }
  // From the resolver, but to a port no query came from: counted, left alone.
  ByteVec stray = udp(kResolver4, kApp4, 53, 41000, "answer");
  EXPECT_FALSE(v4_only.from_channel(stray));
  EXPECT_EQ(stray, udp(kResolver4, kApp4, 53, 41000, "answer"));
  EXPECT_EQ(v4_only.unmatched(), 1u);
  EXPECT_EQ(v4_only.redirected(), 0u);
}

TEST(ChannelDns, AQueryToTheResolverItselfForgetsAnEarlierRedirectOfItsPort) {
  ChannelDns dns = both();
  ByteVec q = udp(kApp4, kRouter4, 40000, 53);
  ASSERT_TRUE(dns.to_channel(q));
  // The port's next query asks the channel's resolver itself: sent as it is, and its answer
  // keeps the resolver's address (the old entry must not rename it to the router's).
  ByteVec direct = udp(kApp4, kResolver4, 40000, 53);
  EXPECT_FALSE(dns.to_channel(direct));
  ByteVec answer = udp(kResolver4, kApp4, 53, 40000, "answer");
  EXPECT_FALSE(dns.from_channel(answer));
  EXPECT_EQ(answer, udp(kResolver4, kApp4, 53, 40000, "answer"));
}

TEST(ChannelDns, AnIpv4UdpChecksumOfZeroStaysZero) {
  ChannelDns dns = both();
  ByteVec q = PacketBuilder().ipv4(kApp4, kRouter4).udp(40000, 53).payload("q")
                  .udp_checksum(0).build();
  ASSERT_TRUE(dns.to_channel(q));
  EXPECT_EQ(q, PacketBuilder().ipv4(kApp4, kResolver4).udp(40000, 53).payload("q")
                   .udp_checksum(0).build());
}

TEST(ChannelDns, AFragmentedAnswerIsRenamedFragmentByFragment) {
  ChannelDns dns = both();
  const std::string body(600, 'a');
  for (const auto& [app, router, resolver] :
       {std::tuple{kApp4, kRouter4, kResolver4}, std::tuple{kApp6, kRouter6, kResolver6}}) {
    const bool v6 = std::string_view(app).find(':') != std::string_view::npos;
    ByteVec q = udp(app, router, 40000, 53);
    ASSERT_TRUE(dns.to_channel(q));
    const auto first = [&](const char* src) {
      PacketBuilder b;
      v6 ? b.ipv6(src, app) : b.ipv4(src, app);
      return b.fragment(0, true, 0x4242).udp(53, 40000).payload(body).build();
    };
    const auto later = [&](const char* src) {
      PacketBuilder b;
      v6 ? b.ipv6(src, app) : b.ipv4(src, app);
      return b.fragment(76, false, 0x4242).payload(body).build();
    };
    ByteVec p = first(resolver);
    EXPECT_TRUE(dns.from_channel(p));
    EXPECT_EQ(p, first(router)) << app;
    p = later(resolver);
    EXPECT_TRUE(dns.from_channel(p));
    EXPECT_EQ(p, later(router)) << app;
    // A later fragment of another datagram: no first fragment seen, left alone.
    PacketBuilder other;
    v6 ? other.ipv6(resolver, app) : other.ipv4(resolver, app);
    p = other.fragment(76, false, 0x7777).payload(body).build();
    const ByteVec before = p;
    EXPECT_FALSE(dns.from_channel(p));
    EXPECT_EQ(p, before);
  }
}

TEST(ChannelDns, TheOldestPortGivesWayWhenTheTableIsFull) {
  ChannelDns dns = both(2);
  for (std::uint16_t port : {40000, 40001, 40002}) {
    ByteVec q = udp(kApp4, kRouter4, port, 53);
    ASSERT_TRUE(dns.to_channel(q));
  }
  ByteVec a = udp(kResolver4, kApp4, 53, 40000, "answer");
  EXPECT_FALSE(dns.from_channel(a));  // forgotten: arrives from the resolver, unmatched
  a = udp(kResolver4, kApp4, 53, 40002, "answer");
  EXPECT_TRUE(dns.from_channel(a));
  EXPECT_EQ(dns.unmatched(), 1u);
}

TEST(ChannelDns, AQueryFromTheNativeSourceLeavesFromTheTunnelAndItsAnswerGoesBack) {
  // A socket that named the native interface (systemd-resolved's IP_UNICAST_IF) had its
  // query routed again into the TUN with the native source, which the provider refuses.
  ChannelDns dns = with_tunnel(true);
  const RoundTrip cases[] = {
      {udp(kNative4, kRouter4, 40000, 53), udp(kApp4, kResolver4, 40000, 53),
       udp(kResolver4, kApp4, 53, 40000, "answer"), udp(kRouter4, kNative4, 53, 40000, "answer")},
      {udp(kNative6, kRouter6, 40001, 53), udp(kApp6, kResolver6, 40001, 53),
       udp(kResolver6, kApp6, 53, 40001, "answer"), udp(kRouter6, kNative6, 53, 40001, "answer")},
      {tcp(kNative4, kRouter4, 40002, 53), tcp(kApp4, kResolver4, 40002, 53),
       tcp(kResolver4, kApp4, 53, 40002), tcp(kRouter4, kNative4, 53, 40002)},
      {tcp(kNative6, kRouter6, 40003, 53), tcp(kApp6, kResolver6, 40003, 53),
       tcp(kResolver6, kApp6, 53, 40003), tcp(kRouter6, kNative6, 53, 40003)},
  };
  expect_round_trips(dns, cases);
  EXPECT_EQ(dns.redirected(), 4u);
  EXPECT_EQ(dns.answered(), 4u);
  EXPECT_EQ(dns.sources_renamed(), 4u);
  EXPECT_EQ(dns.answers_to_source(), 4u);
}

TEST(ChannelDns, WithoutAResolverOnlyTheSourceIsRenamed) {
  ChannelDns dns = with_tunnel(false);
  EXPECT_FALSE(dns.enabled());
  ByteVec q = udp(kNative4, kRouter4, 40000, 53);
  ASSERT_TRUE(dns.to_channel(q));
  EXPECT_EQ(q, udp(kApp4, kRouter4, 40000, 53));
  ByteVec a = udp(kRouter4, kApp4, 53, 40000, "answer");
  ASSERT_TRUE(dns.from_channel(a));
  EXPECT_EQ(a, udp(kRouter4, kNative4, 53, 40000, "answer"));
  // A query from the tunnel's own address is sent as it is.
  ByteVec own = udp(kApp6, kRouter6, 40001, 53);
  EXPECT_FALSE(dns.to_channel(own));
  EXPECT_EQ(own, udp(kApp6, kRouter6, 40001, 53));
  EXPECT_EQ(dns.redirected(), 0u);
  EXPECT_EQ(dns.sources_renamed(), 1u);
}

TEST(ChannelDns, ALaterQueryFromTheTunnelOnTheSamePortKeepsItsAnswer) {
  ChannelDns dns = with_tunnel(false);
  ByteVec q = udp(kNative4, kRouter4, 40000, 53);
  ASSERT_TRUE(dns.to_channel(q));
  ByteVec own = udp(kApp4, kRouter4, 40000, 53);
  EXPECT_FALSE(dns.to_channel(own));
  ByteVec a = udp(kRouter4, kApp4, 53, 40000, "answer");
  EXPECT_FALSE(dns.from_channel(a));  // the port's entry is the later query's: no rename
  EXPECT_EQ(a, udp(kRouter4, kApp4, 53, 40000, "answer"));
}

TEST(ChannelDns, AFragmentedAnswerGoesBackToTheSourceFragmentByFragment) {
  ChannelDns dns = with_tunnel(true);
  const std::string body(600, 'b');
  for (const auto& [app, native, router, resolver] :
       {std::tuple{kApp4, kNative4, kRouter4, kResolver4},
        std::tuple{kApp6, kNative6, kRouter6, kResolver6}}) {
    const bool v6 = std::string_view(app).find(':') != std::string_view::npos;
    ByteVec q = udp(native, router, 40000, 53);
    ASSERT_TRUE(dns.to_channel(q));
    const auto first = [&](const char* src, const char* dst) {
      PacketBuilder b;
      v6 ? b.ipv6(src, dst) : b.ipv4(src, dst);
      return b.fragment(0, true, 0x4343).udp(53, 40000).payload(body).build();
    };
    const auto later = [&](const char* src, const char* dst) {
      PacketBuilder b;
      v6 ? b.ipv6(src, dst) : b.ipv4(src, dst);
      return b.fragment(76, false, 0x4343).payload(body).build();
    };
    ByteVec p = first(resolver, app);
    EXPECT_TRUE(dns.from_channel(p));
    EXPECT_EQ(p, first(router, native)) << app;
    p = later(resolver, app);
    EXPECT_TRUE(dns.from_channel(p));
    EXPECT_EQ(p, later(router, native)) << app;
    // A later fragment with the same identification from another sender is not the
    // answer's: left alone.
    const char* other = v6 ? "2001:db8:77::1" : "198.18.77.1";
    p = later(other, app);
    EXPECT_FALSE(dns.from_channel(p));
    EXPECT_EQ(p, later(other, app)) << app;
  }
}

}  // namespace
}  // namespace quicstep::client::tun
