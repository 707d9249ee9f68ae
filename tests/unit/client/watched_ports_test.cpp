#include "client/kernel/watched_ports.hpp"

#include <gtest/gtest.h>

namespace quicstep::client::kernel {
namespace {

common::FlowKey flow(std::uint16_t client_port, std::uint8_t server) {
  common::FlowKey k;
  k.client = common::IpAddress::v4({198, 18, 1, 2});
  k.server = common::IpAddress::v4({198, 18, 10, server});
  k.client_port = client_port;
  k.server_port = 443;
  return k;
}

TEST(WatchedPorts, APortStaysWhileAnyFlowUsingItIsWatched) {
  WatchedPorts w;
  EXPECT_TRUE(w.watch(flow(40000, 10)));   // new port: add it
  EXPECT_FALSE(w.watch(flow(40000, 10)));  // the same flow again: nothing to do
  EXPECT_FALSE(w.watch(flow(40000, 11)));  // the same port, another server
  EXPECT_TRUE(w.watch(flow(40001, 10)));
  EXPECT_EQ(w.flows(), 3u);
  EXPECT_EQ(w.ports(), 2u);
  EXPECT_FALSE(w.unwatch(flow(40000, 10)));  // 40000 still serves the flow to .11
  EXPECT_FALSE(w.unwatch(flow(40000, 10)));  // no longer watched: nothing to delete
  EXPECT_TRUE(w.unwatch(flow(40000, 11)));   // the last one: delete the port
  EXPECT_FALSE(w.unwatch(flow(40002, 10)));  // never watched
  EXPECT_EQ(w.ports(), 1u);
}

TEST(WatchedPorts, ClearForgetsAll) {
  WatchedPorts w;
  w.watch(flow(40000, 10));
  w.clear();
  EXPECT_EQ(w.flows(), 0u);
  EXPECT_FALSE(w.unwatch(flow(40000, 10)));
  EXPECT_TRUE(w.watch(flow(40000, 10)));  // the replaced table's set is empty: add again
}

TEST(WatchedPorts, ReleaseAllGivesOneFlowPerPort) {
  WatchedPorts w;
  w.watch(flow(40000, 10));
  w.watch(flow(40000, 11));
  w.watch(flow(40001, 10));
  const auto released = w.release_all();
  ASSERT_EQ(released.size(), 2u);
  EXPECT_NE(released[0].client_port, released[1].client_port);
  EXPECT_EQ(w.flows(), 0u);
  EXPECT_EQ(w.ports(), 0u);
}

}  // namespace
}  // namespace quicstep::client::kernel
