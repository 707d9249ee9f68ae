// DnsClient against a fake resolver on loopback: at most max_in_flight queries are sent at
// once, the rest wait their turn; an unanswered query is resent and then times out.
#include "measurement/probe/dns_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "common/byte_writer.hpp"
#include "common/dns_message.hpp"

namespace quicstep::measurement::probe {
namespace {

class FakeResolver {
 public:
  FakeResolver() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    std::memcpy(&address_, &a, sizeof(a));
  }
  ~FakeResolver() { ::close(fd_); }
  const sockaddr_storage& address() const { return address_; }

  // Queries received so far (waits briefly for them to arrive).
  std::vector<std::pair<std::vector<std::uint8_t>, sockaddr_storage>> receive() {
    std::vector<std::pair<std::vector<std::uint8_t>, sockaddr_storage>> out;
    for (int idle = 0; idle < 20;) {
      std::array<std::uint8_t, 1500> buf;
      sockaddr_storage from{};
      socklen_t len = sizeof(from);
      const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), 0,
                                   reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) {
        ++idle;
        ::usleep(2000);
        continue;
      }
      out.emplace_back(std::vector<std::uint8_t>(buf.begin(), buf.begin() + n), from);
    }
    return out;
  }

  // Answers a query with one A record 198.18.0.<last>.
  void answer(const std::vector<std::uint8_t>& query, const sockaddr_storage& to,
              std::uint8_t last) {
    auto parsed = common::parse_dns_message(query);
    ASSERT_TRUE(parsed);
    common::ByteWriter w;
    common::DnsHeader h = parsed->header;
    h.qr = true;
    h.ancount = 1;
    common::write_dns_header(w, h);
    ASSERT_TRUE(common::write_dns_name(w, parsed->questions.front().name));
    w.u16(parsed->questions.front().qtype).u16(common::kDnsClassIn);
    w.u16(0xc00c).u16(common::dns_type::kA).u16(common::kDnsClassIn).u32(60).u16(4);
    w.u8(198).u8(18).u8(0).u8(last);
    ::sendto(fd_, w.buffer().data(), w.buffer().size(), 0, reinterpret_cast<const sockaddr*>(&to),
             sizeof(sockaddr_in));
  }

 private:
  int fd_ = -1;
  sockaddr_storage address_{};
};

TEST(DnsClient, KeepsAtMostMaxInFlightAndStartsWaitingOnesAsOthersFinish) {
  FakeResolver resolver;
  DnsClient client(resolver.address(), 5'000'000'000, 2);
  const auto opened = client.open();
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  std::vector<std::string> answered;
  for (int i = 0; i < 5; ++i) {
    const std::string name = "n" + std::to_string(i) + ".test";
    client.resolve(name, common::dns_type::kA, 0, [&answered, name](const DnsAnswer& a) {
      EXPECT_EQ(a.status, DnsStatus::ok);
      answered.push_back(name);
    });
  }
  EXPECT_EQ(client.pending(), 2u);
  EXPECT_EQ(client.waiting(), 3u);
  std::size_t sent = 0;
  for (int round = 0; round < 5 && answered.size() < 5; ++round) {
    auto queries = resolver.receive();
    EXPECT_LE(queries.size(), 2u);  // never more than max_in_flight on the wire
    sent += queries.size();
    for (auto& [q, from] : queries) resolver.answer(q, from, 1);
    ::usleep(20000);
    client.on_readable(1);
  }
  EXPECT_EQ(sent, 5u);
  EXPECT_EQ(answered, (std::vector<std::string>{"n0.test", "n1.test", "n2.test", "n3.test",
                                                "n4.test"}));
  EXPECT_EQ(client.pending(), 0u);
  EXPECT_EQ(client.waiting(), 0u);
}

TEST(DnsClient, ResendsTwiceThenTimesOutAndStartsTheNext) {
  FakeResolver resolver;
  const std::uint64_t timeout = 3'000'000'000;
  DnsClient client(resolver.address(), timeout, 1);
  const auto opened = client.open();
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  std::vector<DnsStatus> statuses;
  for (const char* name : {"slow.test", "next.test"}) {
    client.resolve(name, common::dns_type::kA, 0,
                   [&statuses](const DnsAnswer& a) { statuses.push_back(a.status); });
  }
  EXPECT_EQ(resolver.receive().size(), 1u);
  EXPECT_EQ(client.next_deadline(), timeout / 3);
  client.on_expiry(timeout / 3);
  EXPECT_EQ(resolver.receive().size(), 1u);  // first resend
  client.on_expiry(2 * timeout / 3);
  EXPECT_EQ(resolver.receive().size(), 1u);  // second resend
  EXPECT_EQ(client.next_deadline(), timeout);
  client.on_expiry(timeout);
  ASSERT_EQ(statuses, std::vector<DnsStatus>{DnsStatus::timeout});
  // The waiting query went out when the first timed out; its timeout counts from then.
  EXPECT_EQ(client.pending(), 1u);
  EXPECT_EQ(client.waiting(), 0u);
  auto queries = resolver.receive();
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(client.next_deadline(), timeout + timeout / 3);
  resolver.answer(queries.front().first, queries.front().second, 7);
  ::usleep(20000);
  client.on_readable(timeout + 1);
  EXPECT_EQ(statuses, (std::vector<DnsStatus>{DnsStatus::timeout, DnsStatus::ok}));
}

}  // namespace
}  // namespace quicstep::measurement::probe
