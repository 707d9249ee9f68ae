// The private key's files: wg-quick's world-accessible check and the 0600 copy for setconf.
#include "client/daemon/key_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "unit/client/temp_dir_test.hpp"

namespace quicstep::client::daemon {
namespace {

class KeyFile : public quicstep::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ::chmod(root_.c_str(), 0755);
  }
  std::string file(const std::string& name, mode_t mode) {
    const std::string path = root_ + "/" + name;
    std::ofstream(path) << "[Interface]\nPrivateKey = x\n";
    ::chmod(path.c_str(), mode);
    return path;
  }
  static mode_t mode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
  }
  static std::string content(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
};

TEST_F(KeyFile, WarnsAsWgQuickDoesWhenOthersCanReach) {
  const auto open = world_accessible_warning(file("wg0.conf", 0644));
  ASSERT_TRUE(open.has_value());
  EXPECT_NE(open->find("wg0.conf"), std::string::npos);
  EXPECT_NE(open->find("0644"), std::string::npos);
  EXPECT_FALSE(world_accessible_warning(file("wg0.conf", 0600)).has_value());
  EXPECT_FALSE(world_accessible_warning(file("wg0.conf", 0640)).has_value());  // group only
  EXPECT_TRUE(world_accessible_warning(file("wg0.conf", 0604)).has_value());
}

TEST_F(KeyFile, AClosedFolderKeepsAnOpenFilePrivate) {
  ::mkdir((root_ + "/sub").c_str(), 0700);
  const std::string path = file("sub/wg0.conf", 0644);
  EXPECT_FALSE(world_accessible_warning(path).has_value());
  ::chmod((root_ + "/sub").c_str(), 0711);  // others may pass through: the file is reachable
  EXPECT_TRUE(world_accessible_warning(path).has_value());
}

TEST_F(KeyFile, AMissingFileGivesNoWarning) {
  EXPECT_FALSE(world_accessible_warning(root_ + "/absent.conf").has_value());
}

TEST_F(KeyFile, PrivateFileIsOwnerOnlyWhateverTheUmask) {
  const mode_t old = ::umask(0);  // the laxest umask: an ofstream would create 0666
  const std::string path = root_ + "/wg0.conf";
  const auto written = write_private_file(path, "PrivateKey = secret\n");
  ::umask(old);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(content(path), "PrivateKey = secret\n");
}

TEST_F(KeyFile, PrivateFileReplacesAnOpenFileInsteadOfWritingIntoIt) {
  const std::string path = file("wg0.conf", 0666);
  ASSERT_TRUE(write_private_file(path, "new\n").ok());
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(content(path), "new\n");
}

TEST_F(KeyFile, PrivateFileDoesNotFollowASymbolicLink) {
  const std::string target = file("other", 0644);
  const std::string link = root_ + "/link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(write_private_file(link, "secret\n").ok());
  EXPECT_EQ(content(target), "[Interface]\nPrivateKey = x\n");  // the link's target untouched
  EXPECT_EQ(mode_of(link), 0600u);                               // a new regular file
  EXPECT_EQ(content(link), "secret\n");
}

TEST_F(KeyFile, PrivateFileSaysWhyItCannotBeCreated) {
  const auto written = write_private_file(root_ + "/no/such/folder/wg0.conf", "x");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().message.find("no/such/folder"), std::string::npos);
  EXPECT_NE(written.error().message.find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace quicstep::client::daemon
