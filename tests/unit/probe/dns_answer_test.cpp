#include "measurement/probe/dns_answer.hpp"

#include <gtest/gtest.h>

#include "common/byte_writer.hpp"
#include "common/dns_message.hpp"

namespace quicstep::measurement::probe {
namespace {

namespace dt = common::dns_type;

// A response to (id, name, qtype) with the given rcode and answer records (type, rdata);
// the answers' owner is a compression pointer to the question name (offset 12).
std::vector<std::uint8_t> response(std::uint16_t id, const std::string& name, std::uint16_t qtype,
                                   std::uint8_t rcode,
                                   const std::vector<std::pair<std::uint16_t,
                                                               std::vector<std::uint8_t>>>& rrs) {
  common::ByteWriter w;
  common::DnsHeader h;
  h.id = id;
  h.qr = true;
  h.rd = h.ra = true;
  h.rcode = rcode;
  h.qdcount = 1;
  h.ancount = static_cast<std::uint16_t>(rrs.size());
  common::write_dns_header(w, h);
  EXPECT_TRUE(common::write_dns_name(w, name));
  w.u16(qtype).u16(common::kDnsClassIn);
  for (const auto& [type, rdata] : rrs) {
    w.u16(0xc00c).u16(type).u16(common::kDnsClassIn).u32(60);
    w.u16(static_cast<std::uint16_t>(rdata.size())).bytes(rdata);
  }
  return w.take();
}

TEST(DnsAnswer, QueryRoundTrip) {
  auto q = build_address_query(0x1234, "a.test", dt::kAaaa);
  ASSERT_TRUE(q);
  auto parsed = common::parse_dns_message(*q);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->header.id, 0x1234);
  EXPECT_TRUE(parsed->header.rd);
  ASSERT_EQ(parsed->questions.size(), 1u);
  EXPECT_EQ(parsed->questions[0].name, "a.test");
  EXPECT_EQ(parsed->questions[0].qtype, dt::kAaaa);
}

TEST(DnsAnswer, ARecordsThroughACname) {
  const std::vector<std::uint8_t> cname_target{3, 'c', 'd', 'n', 0};
  const auto msg = response(7, "a.test", dt::kA, 0,
                            {{dt::kCname, cname_target}, {dt::kA, {198, 18, 0, 1}},
                             {dt::kA, {198, 18, 0, 2}}});
  auto a = parse_address_answer(msg, 7, "a.test", dt::kA);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, DnsStatus::ok);
  EXPECT_EQ(a->addresses, (std::vector<std::string>{"198.18.0.1", "198.18.0.2"}));
}

TEST(DnsAnswer, Aaaa) {
  std::vector<std::uint8_t> v6(16, 0);
  v6[0] = 0x20; v6[1] = 0x01; v6[2] = 0x0d; v6[3] = 0xb8; v6[15] = 1;
  auto a = parse_address_answer(response(9, "a.test", dt::kAaaa, 0, {{dt::kAaaa, v6}}), 9,
                                "a.test", dt::kAaaa);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->addresses, (std::vector<std::string>{"2001:db8::1"}));
}

TEST(DnsAnswer, Statuses) {
  auto nx = parse_address_answer(response(1, "a.test", dt::kA, 3, {}), 1, "a.test", dt::kA);
  ASSERT_TRUE(nx);
  EXPECT_EQ(nx->status, DnsStatus::nxdomain);
  auto fail = parse_address_answer(response(1, "a.test", dt::kA, 2, {}), 1, "a.test", dt::kA);
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->status, DnsStatus::servfail);
  auto refused = parse_address_answer(response(1, "a.test", dt::kA, 5, {}), 1, "a.test", dt::kA);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, DnsStatus::servfail);
  auto empty = parse_address_answer(response(1, "a.test", dt::kA, 0, {}), 1, "a.test", dt::kA);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, DnsStatus::no_answer);
}

TEST(DnsAnswer, RejectsStrayAnswers) {
  const auto msg = response(1, "a.test", dt::kA, 0, {{dt::kA, {1, 2, 3, 4}}});
  EXPECT_FALSE(parse_address_answer(msg, 2, "a.test", dt::kA));     // other id
  EXPECT_FALSE(parse_address_answer(msg, 1, "b.test", dt::kA));     // other name
  EXPECT_FALSE(parse_address_answer(msg, 1, "a.test", dt::kAaaa));  // other type
  auto query = build_address_query(1, "a.test", dt::kA);
  ASSERT_TRUE(query);
  EXPECT_FALSE(parse_address_answer(*query, 1, "a.test", dt::kA));  // not a response
}

TEST(DnsAnswer, EveryTruncationFailsCleanly) {
  const auto msg = response(5, "a.test", dt::kA, 0, {{dt::kA, {198, 18, 0, 1}}});
  for (std::size_t len = 0; len < msg.size(); ++len) {
    EXPECT_FALSE(parse_address_answer({msg.data(), len}, 5, "a.test", dt::kA)) << len;
  }
  EXPECT_TRUE(parse_address_answer(msg, 5, "a.test", dt::kA));
}

TEST(DnsAnswer, WrongRdataLength) {
  const auto msg = response(5, "a.test", dt::kA, 0, {{dt::kA, {198, 18, 0}}});
  EXPECT_FALSE(parse_address_answer(msg, 5, "a.test", dt::kA));
}

TEST(DnsAnswer, CombineStatus) {
  EXPECT_EQ(combine_status(DnsStatus::ok, DnsStatus::no_answer), DnsStatus::ok);
  EXPECT_EQ(combine_status(DnsStatus::timeout, DnsStatus::ok), DnsStatus::ok);
  EXPECT_EQ(combine_status(DnsStatus::nxdomain, DnsStatus::nxdomain), DnsStatus::nxdomain);
  EXPECT_EQ(combine_status(DnsStatus::timeout, DnsStatus::servfail), DnsStatus::servfail);
  EXPECT_EQ(combine_status(DnsStatus::timeout, DnsStatus::no_answer), DnsStatus::timeout);
  EXPECT_EQ(combine_status(DnsStatus::no_answer, DnsStatus::no_answer), DnsStatus::no_answer);
}

}  // namespace
}  // namespace quicstep::measurement::probe
