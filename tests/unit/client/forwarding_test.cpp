#include "client/kernel/forwarding.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace quicstep::client::kernel {
namespace {

// A stand-in for /proc/sys/net: ipv4/ip_forward and ipv6/conf/all/forwarding.
class SysNet : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/qs-fwd-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    std::filesystem::create_directories(root_ + "/ipv4");
    std::filesystem::create_directories(root_ + "/ipv6/conf/all");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void set(const char* v4, const char* v6) {
    std::ofstream(root_ + "/ipv4/ip_forward") << v4 << "\n";
    std::ofstream(root_ + "/ipv6/conf/all/forwarding") << v6 << "\n";
  }
  std::string root_;
};

TEST_F(SysNet, EitherFamilyForwardingMakesAForwardingHost) {
  set("0", "0");
  EXPECT_FALSE(host_forwards(root_));
  set("1", "0");
  EXPECT_TRUE(host_forwards(root_));
  set("0", "1");
  EXPECT_TRUE(host_forwards(root_));
}

TEST_F(SysNet, UnreadableOrMissingFilesCountAsOff) {
  EXPECT_FALSE(host_forwards(root_));  // neither file written
  set("garbage", "");
  EXPECT_FALSE(host_forwards(root_));
  EXPECT_FALSE(host_forwards(root_ + "/absent"));
}

}  // namespace
}  // namespace quicstep::client::kernel
