#include "client/kernel/reverse_path_filter.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "unit/client/temp_dir_test.hpp"

namespace quicstep::client::kernel {
namespace {

// A stand-in for /proc/sys/net/ipv4/conf: all/rp_filter and one file per device.
class ConfDir : public quicstep::testing::TempDirTest {
 protected:
  void set(const std::string& device, const std::string& value) {
    std::filesystem::create_directories(root_ + "/" + device);
    std::ofstream(root_ + "/" + device + "/rp_filter") << value << "\n";
  }
  std::string get(const std::string& device) {
    std::string v;
    std::ifstream(root_ + "/" + device + "/rp_filter") >> v;
    return v;
  }
};

TEST_F(ConfDir, AStrictDeviceIsLoosenedAndPutBack) {
  set("all", "0");
  set("eth0", "1");
  set("wlan0", "0");
  set("wg0", "2");
  ReversePathFilter f(root_);
  EXPECT_TRUE(f.loosen("eth0"));
  EXPECT_FALSE(f.loosen("wlan0"));  // max(0, 0): off
  EXPECT_FALSE(f.loosen("wg0"));    // loose already
  EXPECT_FALSE(f.loosen("eth0"));   // done
  EXPECT_EQ(get("eth0"), "2");
  EXPECT_EQ(get("wlan0"), "0");
  EXPECT_EQ(f.loosened(), 1u);
  f.restore();
  EXPECT_EQ(get("eth0"), "1");
}

// RHEL: all = 1 makes every device strict, whatever its own value (the kernel takes the
// larger); a device's 2 makes it loose again.
TEST_F(ConfDir, AllStrictMakesEveryDeviceStrict) {
  set("all", "1");
  set("eth0", "0");
  set("wg0", "1");
  set("ens3", "2");
  ReversePathFilter f(root_);
  EXPECT_TRUE(f.loosen("eth0"));
  EXPECT_TRUE(f.loosen("wg0"));
  EXPECT_FALSE(f.loosen("ens3"));
  EXPECT_EQ(get("all"), "1");  // never touched
  f.restore();
  EXPECT_EQ(get("eth0"), "0");
  EXPECT_EQ(get("wg0"), "1");
}

TEST_F(ConfDir, SetBackByAnotherToolIsLoosenedAgainAndTheirLaterValueKept) {
  set("all", "0");
  set("eth0", "1");
  ReversePathFilter f(root_);
  EXPECT_TRUE(f.loosen("eth0"));
  set("eth0", "1");  // `sysctl --system` again
  EXPECT_TRUE(f.loosen("eth0"));
  EXPECT_EQ(f.loosened(), 2u);
  set("eth0", "0");  // the user turns it off while the daemon runs: theirs
  f.restore();
  EXPECT_EQ(get("eth0"), "0");
}

TEST_F(ConfDir, NoSuchDeviceOrNameIsLeftAlone) {
  set("all", "1");
  ReversePathFilter f(root_);
  EXPECT_FALSE(f.loosen("gone0"));
  EXPECT_FALSE(f.loosen("../all"));
  EXPECT_FALSE(f.loosen(""));
  EXPECT_EQ(get("all"), "1");
}

}  // namespace
}  // namespace quicstep::client::kernel
