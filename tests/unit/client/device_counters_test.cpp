// read_device_counters: an interface channel's byte counters, from a sysfs tree.
#include "client/daemon/device_counters.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "unit/client/temp_dir_test.hpp"

namespace quicstep::client::daemon {
namespace {

class DeviceCounters : public quicstep::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::filesystem::create_directories(root_ + "/class/net/tun0/statistics");
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(root_ + "/class/net/tun0/statistics/" + name) << text;
  }
};

TEST_F(DeviceCounters, ReadsRxAndTxAsOneEntryWithoutHandshake) {
  write("rx_bytes", "123456789012\n");
  write("tx_bytes", "42\n");
  auto r = read_device_counters("tun0", root_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->peers.size(), 1u);
  EXPECT_EQ(r->peers[0].rx_bytes, 123456789012u);
  EXPECT_EQ(r->peers[0].tx_bytes, 42u);
  EXPECT_EQ(r->peers[0].last_handshake_s, 0);
}

TEST_F(DeviceCounters, AGoneDeviceOrABadCounterIsAnError) {
  auto gone = read_device_counters("tun9", root_);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("tun9/statistics/rx_bytes"), std::string::npos);
  write("rx_bytes", "12x\n");
  write("tx_bytes", "1\n");
  auto bad = read_device_counters("tun0", root_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("(`12x')"), std::string::npos) << bad.error().message;
}

TEST_F(DeviceCounters, JudgedLikeAWireGuardPeer) {
  // Sending with nothing coming back for unanswered_after makes the channel unanswered;
  // an answer makes it working again. The counters of a real tunnel device behave so.
  core::ChannelHealthJudge judge;
  common::Timestamp t{1'000'000'000};
  for (int s = 0; s <= 25; ++s) {
    write("rx_bytes", "100\n");
    write("tx_bytes", std::to_string(1000 + s * 100) + "\n");
    auto r = read_device_counters("tun0", root_);
    ASSERT_TRUE(r.ok());
    judge.update(t + std::chrono::seconds(s), 1'700'000'000 + s, true, *r);
  }
  EXPECT_EQ(judge.state(), core::ChannelHealth::unanswered);
  write("rx_bytes", "200\n");
  judge.update(t + std::chrono::seconds(26), 1'700'000'026, true,
               *read_device_counters("tun0", root_));
  EXPECT_EQ(judge.state(), core::ChannelHealth::working);
  EXPECT_FALSE(judge.handshake_age_s().has_value());
}

}  // namespace
}  // namespace quicstep::client::daemon
