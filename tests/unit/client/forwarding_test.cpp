#include "client/kernel/forwarding.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "unit/client/temp_dir_test.hpp"

namespace quicstep::client::kernel {
namespace {

// A stand-in for /proc/sys/net: ipv4/ip_forward and ipv6/conf/all/forwarding.
class SysNet : public quicstep::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::filesystem::create_directories(root_ + "/ipv4");
    std::filesystem::create_directories(root_ + "/ipv6/conf/all");
  }
  void set(const char* v4, const char* v6) {
    std::ofstream(root_ + "/ipv4/ip_forward") << v4 << "\n";
    std::ofstream(root_ + "/ipv6/conf/all/forwarding") << v6 << "\n";
  }
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
