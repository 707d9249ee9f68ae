// Channel of kind "interface", against the kernel in a private network namespace (root):
// an existing device (a veth standing in for another program's TUN) gets default routes in
// the channel's table and keeps them healed; its addresses become the tunnel addresses and
// channel_exempt the exempt lists; at detach (and by cleanup after a crash) the routes go
// and the device stays.
#include "client/daemon/channel.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "net/process.hpp"
#include "private_netns.hpp"

namespace quicstep::client::daemon {
namespace {

using kernel::in_private_netns;

std::string ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return net::run_process(argv).output;
}

bool has_default(const char* family, const std::string& table, const std::string& dev) {
  return ip({family, "route", "show", "table", table}).find("default dev " + dev) !=
         std::string::npos;
}

// A device that another program brought up: addresses of both families, up.
std::string make_device() {
  for (const auto& cmd : std::vector<std::vector<std::string>>{
           {"ip", "link", "add", "qs-if0", "type", "veth", "peer", "name", "qs-if1"},
           {"ip", "addr", "add", "10.9.0.2/32", "dev", "qs-if0"},
           {"ip", "-6", "addr", "add", "2001:db8:9::2/128", "dev", "qs-if0", "nodad"},
           {"ip", "link", "set", "qs-if1", "up"},
           {"ip", "link", "set", "qs-if0", "up"}}) {
    if (auto r = net::run_process(cmd); !r.ok()) return net::describe(cmd, r);
  }
  return {};
}

core::DaemonSettings interface_settings() {
  core::DaemonSettings s;
  s.channel_kind = core::ChannelKind::interface;
  s.channel_interface = "qs-if0";
  s.channel_exempt_v4 = {"203.0.113.7"};
  s.channel_exempt_v6 = {"2001:db8:ff::7"};
  s.routing_table = 51822;
  return s;
}

#define CHECK_OR_RETURN(cond, why) \
  do {                             \
    if (!(cond)) return why;       \
  } while (0)

class InterfaceChannel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace of its own)";
  }
};

TEST_F(InterfaceChannel, RoutesIntoTheDeviceAndLeavesItAtDetach) {
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto why = make_device(); !why.empty()) return why;
              const auto s = interface_settings();
              kernel::RulesetSpec spec;
              spec.stateless = true;
              {
                Channel channel;
                auto attached = channel.attach(s, &spec);
                CHECK_OR_RETURN(attached.ok(), "attach: " + attached.error().message);
                CHECK_OR_RETURN(has_default("-4", "51822", "qs-if0"), "no v4 default route");
                CHECK_OR_RETURN(has_default("-6", "51822", "qs-if0"), "no v6 default route");
                CHECK_OR_RETURN(spec.exempt_v4 == std::vector<std::string>{"203.0.113.7"},
                                "exempt v4 is not channel_exempt");
                CHECK_OR_RETURN(spec.exempt_v6 == std::vector<std::string>{"2001:db8:ff::7"},
                                "exempt v6 is not channel_exempt");
                CHECK_OR_RETURN(spec.tunnel_v4 == "10.9.0.2" && spec.tunnel_v6 == "2001:db8:9::2",
                                "tunnel addresses " + spec.tunnel_v4 + " " + spec.tunnel_v6);
                CHECK_OR_RETURN(channel.owns_routes(), "the routes are not the channel's");
                // Another tool flushed the table: the heal puts the routes back.
                ip({"-4", "route", "flush", "table", "51822"});
                CHECK_OR_RETURN(!has_default("-4", "51822", "qs-if0"), "flush did not flush");
                auto restored = channel.restore_routes();
                CHECK_OR_RETURN(restored.ok(), "restore: " + restored.error().message);
                CHECK_OR_RETURN(has_default("-4", "51822", "qs-if0"), "v4 route not restored");
              }
              CHECK_OR_RETURN(!has_default("-4", "51822", "qs-if0") &&
                                  !has_default("-6", "51822", "qs-if0"),
                              "routes left after detach: " +
                                  ip({"route", "show", "table", "51822"}));
              CHECK_OR_RETURN(net::run_process({"ip", "link", "show", "qs-if0"}).ok(),
                              "the device was deleted: it is not quicstepd's");
              return {};
            }),
            "");
}

TEST_F(InterfaceChannel, CleanupRemovesTheRoutesACrashLeft) {
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto why = make_device(); !why.empty()) return why;
              const auto s = interface_settings();
              kernel::RulesetSpec spec;
              auto crashed = std::make_unique<Channel>();
              auto attached = crashed->attach(s, &spec);
              CHECK_OR_RETURN(attached.ok(), "attach: " + attached.error().message);
              (void)crashed.release();  // no detach: as if the daemon died here
              CHECK_OR_RETURN(has_default("-4", "51822", "qs-if0"), "no route to leave");
              Channel::cleanup(s);
              CHECK_OR_RETURN(!has_default("-4", "51822", "qs-if0") &&
                                  !has_default("-6", "51822", "qs-if0"),
                              "cleanup left routes");
              CHECK_OR_RETURN(net::run_process({"ip", "link", "show", "qs-if0"}).ok(),
                              "cleanup deleted the device");
              return {};
            }),
            "");
}

TEST_F(InterfaceChannel, AMissingDeviceSaysToStartTheTunnelFirst) {
  EXPECT_EQ(in_private_netns([]() -> std::string {
              kernel::RulesetSpec spec;
              Channel channel;
              auto attached = channel.attach(interface_settings(), &spec);
              CHECK_OR_RETURN(!attached.ok(), "attached to a device that does not exist");
              CHECK_OR_RETURN(attached.error().message.find(
                                  "start the tunnel program that brings it up first") !=
                                  std::string::npos,
                              attached.error().message);
              CHECK_OR_RETURN(!has_default("-4", "51822", "qs-if0") &&
                                  !has_default("-6", "51822", "qs-if0"),
                              "routes added for a missing device");
              return {};
            }),
            "");
}

}  // namespace
}  // namespace quicstep::client::daemon
