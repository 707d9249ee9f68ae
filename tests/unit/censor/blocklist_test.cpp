#include "lab/censor/blocklist.hpp"

#include <gtest/gtest.h>

namespace quicstep::censor {
namespace {

struct MatchCase {
  const char* rule;
  const char* name;
  bool matches;
};

TEST(Blocklist, RuleForms) {
  const MatchCase cases[] = {
      {"blocked.test", "blocked.test", true},
      {"blocked.test", "www.blocked.test", false},
      {"*.blocked.test", "www.blocked.test", true},
      {"*.blocked.test", "a.b.blocked.test", true},
      {"*.blocked.test", "blocked.test", false},
      {".blocked.test", "blocked.test", true},
      {".blocked.test", "www.blocked.test", true},
      {".blocked.test", "notblocked.test", false},
      {"*.blocked.test", "xblocked.test", false},
      {"blocked.test", "BLOCKED.Test.", true},
      {"Blocked.TEST.", "blocked.test", true},
      {"blocked.test", "open.test", false},
      {"blocked.test", "", false},
  };
  for (const auto& c : cases) {
    Blocklist list;
    ASSERT_FALSE(list.add(c.rule)) << c.rule;
    EXPECT_EQ(list.match(c.name).has_value(), c.matches) << c.rule << " vs " << c.name;
  }
}

TEST(Blocklist, ReportsTheRuleThatMatched) {
  Blocklist list;
  list.load("*.test\nblocked.test\n.deep.blocked.test\n");
  EXPECT_EQ(list.match("blocked.test")->rule, "blocked.test");           // exact first
  EXPECT_EQ(list.match("a.deep.blocked.test")->rule, ".deep.blocked.test");  // longest suffix
  EXPECT_EQ(list.match("open.test")->rule, "*.test");
}

TEST(Blocklist, BadLinesAreReportedWithLineNumbersAndSkipped) {
  Blocklist list;
  const auto problems = list.load(
      "# the lab's list\n"
      "blocked.test\n"
      "\n"
      "a..b\n"
      "bad name.test\n"
      "*.also.test   # trailing comment\n" +
      std::string("x.") + std::string(64, 'a') + "\n" + "*.\n" + "ok.test");
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].line, 4u);
  EXPECT_EQ(problems[0].message, "line 4: `a..b': empty label");
  EXPECT_EQ(problems[1].line, 5u);
  EXPECT_NE(problems[1].message.find("`bad name.test'"), std::string::npos);
  EXPECT_EQ(problems[2].line, 7u);
  EXPECT_NE(problems[2].message.find("label over 63"), std::string::npos);
  EXPECT_EQ(problems[3].line, 8u);
  EXPECT_EQ(list.size(), 3u);
  EXPECT_TRUE(list.match("www.also.test"));
  EXPECT_TRUE(list.match("ok.test"));
}

TEST(Blocklist, FileErrors) {
  Blocklist list;
  auto problems = load_blocklist_file("/nonexistent/blocklist.txt", list);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 0u);
}

TEST(Blocklist, LongNamesDoNotMatchOrCrash) {
  Blocklist list;
  list.add(".test");
  EXPECT_FALSE(list.match(std::string(300, 'a') + ".test"));
  EXPECT_TRUE(list.match(std::string(60, 'a') + ".test"));
}

}  // namespace
}  // namespace quicstep::censor
