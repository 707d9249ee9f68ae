#include "measurement/probe/try_label.hpp"

#include <gtest/gtest.h>

namespace quicstep::measurement::probe {
namespace {

TEST(TryTally, StopsOnceMajorityIsCertain) {
  TryTally t(3);
  EXPECT_FALSE(t.decided());
  EXPECT_EQ(t.label(), Label::not_run);
  t.add(Label::pass);
  EXPECT_FALSE(t.decided());
  t.add(Label::pass);
  EXPECT_TRUE(t.decided());
  EXPECT_EQ(t.label(), Label::pass);
  EXPECT_EQ(t.tries().size(), 2u);
}

TEST(TryTally, SplitGoesToThirdTry) {
  TryTally t(3);
  t.add(Label::pass);
  t.add(Label::timeout_after_switch);
  EXPECT_FALSE(t.decided());
  t.add(Label::timeout_after_switch);
  EXPECT_TRUE(t.decided());
  EXPECT_EQ(t.label(), Label::timeout_after_switch);
}

TEST(TryTally, TieNeverClaimsSupport) {
  TryTally even(2);
  even.add(Label::pass);
  even.add(Label::path_validation_failed);
  EXPECT_TRUE(even.decided());
  EXPECT_EQ(even.label(), Label::path_validation_failed);
  TryTally three(3);
  three.add(Label::pass);
  three.add(Label::connection_closed);
  three.add(Label::timeout_after_switch);
  EXPECT_TRUE(three.decided());
  EXPECT_NE(three.label(), Label::pass);
}

TEST(TryTally, OneTry) {
  TryTally t(1);
  t.add(Label::response_on_old_path);
  EXPECT_TRUE(t.decided());
  EXPECT_EQ(t.label(), Label::response_on_old_path);
}

TEST(TryTally, Untried) {
  TryTally t(3);
  t.set_untried(Label::refused);
  EXPECT_TRUE(t.decided());
  EXPECT_EQ(t.label(), Label::refused);
  EXPECT_TRUE(t.tries().empty());
}

TEST(Label, Names) {
  EXPECT_EQ(to_string(Label::pass), "pass");
  EXPECT_EQ(to_string(Label::refused), "refused");
  EXPECT_EQ(to_string(Label::no_spare_cid), "no_spare_cid");
  EXPECT_EQ(to_string(Label::path_validation_failed), "path_validation_failed");
  EXPECT_EQ(to_string(Label::timeout_after_switch), "timeout_after_switch");
  EXPECT_EQ(to_string(Label::response_on_old_path), "response_on_old_path");
  EXPECT_EQ(to_string(Label::connection_closed), "connection_closed");
  EXPECT_EQ(to_string(Label::handshake_failed), "handshake_failed");
  EXPECT_EQ(to_string(Label::not_run), "not_run");
}

}  // namespace
}  // namespace quicstep::measurement::probe
