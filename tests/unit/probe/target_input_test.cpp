#include "measurement/probe/target_input.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace quicstep::measurement::probe {
namespace {

TEST(TargetLine, TrancoLine) {
  const ParsedLine p = parse_target_line("12,Example.COM.\r", 3);
  ASSERT_EQ(p.kind, LineKind::target);
  EXPECT_EQ(p.target.rank, 12u);
  EXPECT_EQ(p.target.domain, "example.com");
  EXPECT_EQ(p.target.input_line, 3u);
}

TEST(TargetLine, PlainDomain) {
  const ParsedLine p = parse_target_line("  a-b_c.test  ", 1);
  ASSERT_EQ(p.kind, LineKind::target);
  EXPECT_FALSE(p.target.rank.has_value());
  EXPECT_EQ(p.target.domain, "a-b_c.test");
}

TEST(TargetLine, SkipsBlankAndComments) {
  EXPECT_EQ(parse_target_line("", 1).kind, LineKind::skip);
  EXPECT_EQ(parse_target_line("   \r", 1).kind, LineKind::skip);
  EXPECT_EQ(parse_target_line("# header", 1).kind, LineKind::skip);
}

TEST(TargetLine, BadLinesQuoteTheValue) {
  const std::string long_label = std::string(64, 'a') + ".test";
  struct Case {
    std::string line;
    const char* reason_part;
  };
  const Case cases[] = {
      {"0,a.test", "rank is not a positive integer: `0'"},
      {"-1,a.test", "rank is not a positive integer"},
      {"1x,a.test", "rank is not a positive integer: `1x'"},
      {"99999999999999999999999,a.test", "rank is not a positive integer"},
      {"1,a.test,extra", "more than two fields"},
      {"1,", "empty domain name"},
      {"a..test", "empty label"},
      {"-a.test", "starts or ends with '-'"},
      {"a-.test", "starts or ends with '-'"},
      {"a b.test", "invalid character"},
      {"ä.test", "invalid character"},
      {long_label, "label over 63"},
  };
  for (const Case& c : cases) {
    const ParsedLine p = parse_target_line(c.line, 1);
    EXPECT_EQ(p.kind, LineKind::bad) << c.line;
    EXPECT_NE(p.reason.find(c.reason_part), std::string::npos) << c.line << " → " << p.reason;
  }
}

TEST(TargetLine, LengthLimits) {
  std::string name;
  while (name.size() < 250) name += "abcdefghi.";
  name += "abc";
  ASSERT_EQ(name.size(), 253u);
  EXPECT_TRUE(is_valid_domain(name));
  EXPECT_FALSE(is_valid_domain(name + "x"));
  EXPECT_EQ(parse_target_line(std::string(5000, 'a'), 1).kind, LineKind::bad);
}

TEST(TargetLine, NamesToProbe) {
  EXPECT_EQ(names_to_probe("a.test", true), (std::vector<std::string>{"a.test", "www.a.test"}));
  EXPECT_EQ(names_to_probe("a.test", false), (std::vector<std::string>{"a.test"}));
  EXPECT_EQ(names_to_probe("www.a.test", true), (std::vector<std::string>{"www.a.test"}));
}

TEST(TargetReader, NumbersLinesAndSkips) {
  std::istringstream in("# list\n1,a.test\n\nbad..x\nb.test\n");
  TargetReader reader(in);
  auto first = reader.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->target.input_line, 2u);
  auto second = reader.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->kind, LineKind::bad);
  EXPECT_EQ(second->target.input_line, 4u);
  auto third = reader.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->target.domain, "b.test");
  EXPECT_EQ(third->target.input_line, 5u);
  EXPECT_FALSE(reader.next());
}

}  // namespace
}  // namespace quicstep::measurement::probe
