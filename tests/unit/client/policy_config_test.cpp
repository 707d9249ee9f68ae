// The TOML config: the example file is complete and equals the defaults; bad input is
// refused with file, line, column and the bad value quoted.
#include "client/core/policy_config.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace quicstep::client::core {
namespace {

using namespace std::chrono_literals;

// The one error of loading `text`, as "file:line:column: message".
std::string one_error(std::string_view text) {
  const ConfigLoad load = parse_config(text, "q.toml");
  if (load.errors.size() != 1) return "errors: " + std::to_string(load.errors.size());
  return load.errors[0].to_string();
}

TEST(PolicyConfig, ExampleFileLoadsToTheDefaults) {
  const ConfigLoad load = load_config(QS_CLIENT_SOURCE_DIR "/quicstepd.example.toml");
  ASSERT_TRUE(load.ok()) << load.errors[0].to_string();
  const Policy& p = load.config.policy;
  const Policy d;
  EXPECT_EQ(p.quic_ports, d.quic_ports);
  EXPECT_EQ(p.other_udp, d.other_udp);
  EXPECT_EQ(p.hold.packets, d.hold.packets);
  EXPECT_EQ(p.watchdog.rtt_multiplier, d.watchdog.rtt_multiplier);
  EXPECT_EQ(p.watchdog.min_timeout, d.watchdog.min_timeout);
  EXPECT_EQ(p.watchdog.max_timeout, d.watchdog.max_timeout);
  EXPECT_EQ(p.watchdog.unknown_rtt, d.watchdog.unknown_rtt);
  EXPECT_EQ(p.destinations.capacity, d.destinations.capacity);
  EXPECT_EQ(p.destinations.ttl, d.destinations.ttl);
  EXPECT_EQ(p.flows.capacity, d.flows.capacity);
  EXPECT_EQ(p.flows.idle_timeout, d.flows.idle_timeout);
  EXPECT_EQ(p.event_capacity, d.event_capacity);
  const DaemonSettings& s = load.config.daemon;
  const DaemonSettings ds;
  EXPECT_EQ(s.queue_outbound, ds.queue_outbound);
  EXPECT_EQ(s.mark_channel, ds.mark_channel);
  EXPECT_EQ(s.routing_table, ds.routing_table);
  EXPECT_EQ(s.channel_interface, ds.channel_interface);
  EXPECT_EQ(s.addressing, Addressing::stateless);
  EXPECT_EQ(s.metrics_listen, ds.metrics_listen);
  const TunSettings& t = load.config.tun;
  const TunSettings dt;
  EXPECT_EQ(t.device, dt.device);
  EXPECT_EQ(t.wg_config, dt.wg_config);
  EXPECT_EQ(t.table, dt.table);
  EXPECT_EQ(t.fwmark, dt.fwmark);
  EXPECT_EQ(t.control_socket, dt.control_socket);
  EXPECT_EQ(t.offload, dt.offload);
  EXPECT_EQ(t.fast_path, dt.fast_path);
}

TEST(PolicyConfig, ReadsQuicstepTunsTable) {
  const ConfigLoad load = parse_config(
      "[tun]\ndevice = \"qst7\"\nwg_config = \"/etc/wireguard/wg0.conf\"\ntable = 100\n"
      "fwmark = 0x77\ncontrol_socket = \"/run/t.sock\"\noffload = false\n"
      "fast_path = false\n",
      "q.toml");
  ASSERT_TRUE(load.ok()) << load.errors[0].to_string();
  EXPECT_EQ(load.config.tun.device, "qst7");
  EXPECT_EQ(load.config.tun.wg_config, "/etc/wireguard/wg0.conf");
  EXPECT_EQ(load.config.tun.table, 100u);
  EXPECT_EQ(load.config.tun.fwmark, 0x77u);
  EXPECT_EQ(load.config.tun.control_socket, "/run/t.sock");
  EXPECT_FALSE(load.config.tun.offload);
  EXPECT_FALSE(load.config.tun.fast_path);
  EXPECT_TRUE(TunSettings{}.fast_path);
  EXPECT_EQ(one_error("[tun]\ndevice = \"a/b\"\n"),
            "q.toml:2:10: device must be an interface name of 1..15 characters without '/', "
            "':' or spaces, not 'a/b'");
  EXPECT_EQ(one_error("[tun]\ntable = 254\n"),
            "q.toml:2:9: table must not be 253..255 (the kernel's default, main and local "
            "tables), not 254");
  EXPECT_EQ(one_error("[tun]\nfwmark = 0\n"),
            "q.toml:2:10: fwmark must be an integer in 1..4294967295, not 0");
  EXPECT_EQ(one_error("[tun]\noffload = 1\n"), "q.toml:2:11: offload must be true or false, not 1");
  EXPECT_EQ(one_error("[tun]\nmtu = 1400\n").rfind("q.toml:2:1: unknown key 'mtu' in [tun]", 0), 0u);
}

TEST(PolicyConfig, EmptyFileIsTheDefaults) {
  const ConfigLoad load = parse_config("", "q.toml");
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load.config.policy.quic_ports, std::vector<std::uint16_t>{443});
}

TEST(PolicyConfig, ReadsStatelessAddressing) {
  const ConfigLoad load = parse_config("[daemon]\naddressing = \"stateless\"\n", "q.toml");
  ASSERT_TRUE(load.ok()) << load.errors[0].to_string();
  EXPECT_EQ(load.config.daemon.addressing, Addressing::stateless);
  EXPECT_EQ(to_string(Addressing::stateless), "stateless");
  EXPECT_FALSE(parse_config("[daemon]\naddressing = \"stateful\"\n", "q.toml").ok());
  EXPECT_FALSE(parse_config("[daemon]\nnative_gso = \"user\"\n", "q.toml").ok());
  EXPECT_FALSE(parse_config("", "q.toml").config.daemon.native_gso_in_kernel);
}

TEST(PolicyConfig, NativeSwitchIsOnByDefaultAndBounded) {
  const NativeSwitchPolicy n = parse_config("", "q.toml").config.policy.native_switch;
  EXPECT_TRUE(n.enabled);
  EXPECT_EQ(n.rtt_percent, 50u);
  EXPECT_EQ(n.min_delay, 1ms);
  EXPECT_EQ(n.max_delay, 100ms);
  EXPECT_EQ(n.unknown_rtt_delay, Duration::zero());
  EXPECT_FALSE(parse_config("[native_switch]\nmax_delay_ms = 1001\n", "q.toml").ok());
  EXPECT_FALSE(parse_config("[native_switch]\nmin_delay_ms = -1\n", "q.toml").ok());
  EXPECT_FALSE(parse_config("[native_switch]\nrtt_percent = 401\n", "q.toml").ok());
  EXPECT_FALSE(parse_config("[native_switch]\ndelay = 5\n", "q.toml").ok());
}

TEST(PolicyConfig, TheHoldAtTheSwitchIsOffByDefault) {
  EXPECT_FALSE(parse_config("", "q.toml").config.policy.native_switch.hold);
  const ConfigLoad on = parse_config("[native_switch]\nhold = true\n", "q.toml");
  ASSERT_TRUE(on.ok()) << on.errors[0].to_string();
  EXPECT_TRUE(on.config.policy.native_switch.hold);
  EXPECT_FALSE(parse_config("[native_switch]\nhold = 1\n", "q.toml").ok());
}

TEST(PolicyConfig, LiftDatagramsAreOffByDefaultAndBounded) {
  const NativeSwitchPolicy off = parse_config("", "q.toml").config.policy.native_switch;
  EXPECT_EQ(off.lift_bytes, 0u);
  EXPECT_EQ(off.lift_delay, Duration::zero());
  const ConfigLoad on =
      parse_config("[native_switch]\nlift_bytes = 9600\nlift_delay_ms = 20\n", "q.toml");
  ASSERT_TRUE(on.ok()) << on.errors[0].to_string();
  EXPECT_EQ(on.config.policy.native_switch.lift_bytes, 9600u);
  EXPECT_EQ(on.config.policy.native_switch.lift_delay, 20ms);
  EXPECT_FALSE(parse_config("[native_switch]\nlift_bytes = 60001\n", "q.toml").ok());
  EXPECT_FALSE(parse_config("[native_switch]\nlift_delay_ms = 1001\n", "q.toml").ok());
}

TEST(PolicyConfig, ReadsValues) {
  const ConfigLoad load = parse_config(R"(
[classifier]
quic_ports = [443, 853]
other_udp = "channel"
[hold]
packets = 4
time_ms = 250
[native_switch]
rtt_percent = 75
unknown_rtt_delay_ms = 7
[watchdog]
min_timeout_ms = 100
min_unanswered_packets = 5
[destination_cache]
first_penalty_s = 60
[daemon]
addressing = "permissive"
routing_table = 100
native_conntrack = true
native_gso = "kernel"
native_prefixes = ["192.168.0.0/16", "fd00:0::/8", "10.1.2.3/32"]
)", "q.toml");
  ASSERT_TRUE(load.ok()) << load.errors[0].to_string();
  const Policy& p = load.config.policy;
  EXPECT_EQ(p.quic_ports, (std::vector<std::uint16_t>{443, 853}));
  EXPECT_EQ(p.other_udp, Route::channel);
  EXPECT_EQ(p.hold.packets, 4u);
  EXPECT_EQ(p.hold.time, 250ms);
  EXPECT_EQ(p.native_switch.rtt_percent, 75u);
  EXPECT_EQ(p.native_switch.unknown_rtt_delay, 7ms);
  EXPECT_EQ(p.watchdog.min_timeout, 100ms);
  EXPECT_EQ(p.watchdog.min_unanswered_packets, 5u);
  EXPECT_EQ(p.destinations.first_penalty, 60s);
  EXPECT_EQ(load.config.daemon.addressing, Addressing::permissive);
  EXPECT_EQ(load.config.daemon.routing_table, 100u);
  EXPECT_EQ(load.config.daemon.native_conntrack, std::optional<bool>(true));
  EXPECT_TRUE(load.config.daemon.native_gso_in_kernel);
  EXPECT_EQ(load.config.daemon.native_prefixes_v4,
            (std::vector<std::string>{"192.168.0.0/16", "10.1.2.3/32"}));
  EXPECT_EQ(load.config.daemon.native_prefixes_v6, (std::vector<std::string>{"fd00::/8"}));
}

TEST(PolicyConfig, NativePrefixesMustBePrefixes) {
  for (const char* bad : {"\"192.168.0.0\"", "\"192.168.0.0/33\"", "\"fd00::/129\"",
                          "\"host.lan/24\"", "\"1.2.3.4/8x\"", "\"1.2.3.4/\"", "3"}) {
    const std::string text = std::string("[daemon]\nnative_prefixes = [") + bad + "]\n";
    EXPECT_NE(one_error(text).find("q.toml:2:20: native_prefixes: each must be"),
              std::string::npos) << bad << ": " << one_error(text);
  }
  EXPECT_NE(one_error("[daemon]\nnative_prefixes = \"10.0.0.0/8\"\n").find("must be an array"),
            std::string::npos);
}

TEST(PolicyConfig, UnknownKeysAreErrors) {
  EXPECT_EQ(one_error("[watchdog]\nenabled = true\nrtt_multipler = 4\n"),
            "q.toml:3:1: unknown key 'rtt_multipler' in [watchdog] (expected one of: 'enabled' "
            "'rtt_multiplier' 'min_timeout_ms' 'max_timeout_ms' 'unknown_rtt_ms' "
            "'min_unanswered_packets')");
  EXPECT_NE(one_error("[watchdgo]\n").find("q.toml:1:2: unknown key 'watchdgo'"),
            std::string::npos);
}

TEST(PolicyConfig, RangesAndTypesQuoteTheBadValue) {
  EXPECT_EQ(one_error("[watchdog]\nmin_unanswered_packets = 0\n"),
            "q.toml:2:26: min_unanswered_packets must be an integer in 1..64, not 0");
  EXPECT_NE(one_error("[destination_cache]\nfirst_penalty_s = 0\n").find("not 0"),
            std::string::npos);
  EXPECT_EQ(one_error("\n[flow_table]\ncapacity = 3\n"),
            "q.toml:3:12: capacity must be an integer in 16..4194304, not 3");
  EXPECT_EQ(one_error("[classifier]\ndns_to_channel = \"yes\"\n"),
            "q.toml:2:18: dns_to_channel must be true or false, not 'yes'");
  EXPECT_EQ(one_error("[classifier]\nother_udp = \"nativ\"\n"),
            "q.toml:2:13: other_udp must be one of 'channel' 'native', not 'nativ'");
  EXPECT_EQ(one_error("[classifier]\nquic_ports = [443, 70000]\n"),
            "q.toml:2:20: quic_ports: a port must be an integer in 1..65535, not 70000");
  EXPECT_NE(one_error("[classifier]\nquic_ports = [443, 443]\n").find("listed twice"),
            std::string::npos);
  EXPECT_NE(one_error("[classifier]\nquic_ports = []\n").find("quic_ports must be an array"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nrouting_table = 254\n").find("not 254"), std::string::npos);
  EXPECT_NE(one_error("[daemon]\nchannel_interface = \"a/b\"\n").find("'a/b'"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nmetrics_listen = \"localhost\"\n").find("host:port"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nqueue_inbound = 0\n").find("must differ"), std::string::npos);
  EXPECT_NE(one_error("[daemon]\nmark_native = 0x51\n").find("must differ"), std::string::npos);
  EXPECT_NE(one_error("[watchdog]\nmin_timeout_ms = 5000\n").find("must not exceed"),
            std::string::npos);
  EXPECT_NE(one_error("hold = 3\n").find("[hold] must be a table"), std::string::npos);
}

TEST(PolicyConfig, SyntaxErrorsHaveAPosition) {
  const ConfigLoad load = parse_config("[hold]\npackets = = 3\n", "q.toml");
  ASSERT_EQ(load.errors.size(), 1u);
  EXPECT_EQ(load.errors[0].file, "q.toml");
  EXPECT_EQ(load.errors[0].line, 2u);
}

TEST(PolicyConfig, ReportsEveryError) {
  const ConfigLoad load =
      parse_config("[hold]\npackets = -1\ntime_ms = 99999999\n[flow_table]\nbogus = 1\n", "q");
  EXPECT_EQ(load.errors.size(), 3u);
}

TEST(PolicyConfig, UnreadableFile) {
  const ConfigLoad load = load_config("/nonexistent/quicstepd.toml");
  ASSERT_EQ(load.errors.size(), 1u);
  EXPECT_EQ(load.errors[0].line, 0u);
  EXPECT_NE(load.errors[0].to_string().find("/nonexistent/quicstepd.toml: cannot read"),
            std::string::npos);
}

TEST(PolicyConfig, NativeFlowsAreTrackedUnlessNatOrSaidOtherwise) {
  DaemonSettings d;
  EXPECT_FALSE(d.native_conntrack.has_value());
  EXPECT_TRUE(tracks_native(d));  // stateless, the default
  d.addressing = Addressing::permissive;
  EXPECT_TRUE(tracks_native(d));
  d.addressing = Addressing::nat;  // masquerade's bindings must stay off native packets
  EXPECT_FALSE(tracks_native(d));
  d.native_conntrack = true;
  EXPECT_TRUE(tracks_native(d));
  d.addressing = Addressing::stateless;
  d.native_conntrack = false;
  EXPECT_FALSE(tracks_native(d));
  auto load = parse_config("[daemon]\nnative_conntrack = false\n", "t.toml");
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load.config.daemon.native_conntrack, std::optional<bool>(false));
  load = parse_config("[daemon]\nnative_conntrack = \"yes\"\n", "t.toml");
  EXPECT_FALSE(load.ok());
}

}  // namespace
}  // namespace quicstep::client::core

namespace quicstep::client::core {
namespace {

TEST(PolicyConfigRouted, AutoTakesTheRoutedPathWhereTheConfigAllowsIt) {
  const auto routed = [](const char* text) {
    const ConfigLoad load = parse_config(text, "q.toml");
    EXPECT_TRUE(load.ok()) << text;
    return load.config.daemon.native_path_routed;
  };
  const ConfigLoad def = parse_config("", "q.toml");
  EXPECT_EQ(def.config.daemon.native_path, NativePathChoice::automatic);
  EXPECT_TRUE(def.config.daemon.native_path_routed);  // stateless, other traffic native
  EXPECT_TRUE(routed("[daemon]\nnative_path = \"auto\"\n"));
  EXPECT_FALSE(routed("[daemon]\nnative_path = \"queue\"\n"));
  // What the routed path cannot carry: the queue path, without an error.
  EXPECT_FALSE(routed("[daemon]\naddressing = \"nat\"\n"));
  EXPECT_FALSE(routed("[daemon]\naddressing = \"permissive\"\n"));
  EXPECT_FALSE(routed("[classifier]\nother_udp = \"channel\"\n"));
  EXPECT_FALSE(routed("[classifier]\nother_protocols = \"channel\"\n"));
}

TEST(PolicyConfigRouted, ExplicitRoutedNeedsStatelessAddressing) {
  const ConfigLoad ok = parse_config(
      "[daemon]\nnative_path = \"routed\"\nrouted_table = 900\nguard_pin_dir = \"/run/x/q\"\n",
      "q.toml");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok.config.daemon.native_path_routed);
  EXPECT_EQ(ok.config.daemon.routed_table, 900u);
  EXPECT_EQ(ok.config.daemon.guard_pin_dir, "/run/x/q");
  EXPECT_EQ(one_error("[daemon]\naddressing = \"nat\"\nnative_path = \"routed\"\n"),
            "q.toml:3:15: native_path = \"routed\" needs addressing = \"stateless\"");
  EXPECT_NE(one_error("[daemon]\nnative_path = \"fast\"\n").find("'auto' 'queue' 'routed'"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nrouted_table = 51820\n").find("must differ"), std::string::npos);
}

TEST(PolicyConfigChannelKind, WireGuardIsTheDefault) {
  const ConfigLoad load = parse_config("", "q.toml");
  EXPECT_EQ(load.config.daemon.channel_kind, ChannelKind::wireguard);
  EXPECT_TRUE(load.config.daemon.channel_exempt_v4.empty());
}

TEST(PolicyConfigChannelKind, InterfaceReadsItsTunnelServers) {
  const ConfigLoad load = parse_config(
      "[daemon]\nchannel_kind = \"interface\"\nchannel_interface = \"tun0\"\n"
      "channel_exempt = [\"203.0.113.7\", \"2001:DB8:0::7\"]\n",
      "q.toml");
  ASSERT_TRUE(load.ok()) << load.errors[0].to_string();
  EXPECT_EQ(load.config.daemon.channel_kind, ChannelKind::interface);
  EXPECT_EQ(load.config.daemon.channel_exempt_v4, (std::vector<std::string>{"203.0.113.7"}));
  EXPECT_EQ(load.config.daemon.channel_exempt_v6, (std::vector<std::string>{"2001:db8::7"}));
}

TEST(PolicyConfigChannelKind, InterfaceNeedsExemptServersAndNoWgConfig) {
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"interface\"\n")
                .find("q.toml:2:16: channel_kind = \"interface\" needs channel_exempt"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"interface\"\nwg_config = \"/etc/wg.conf\"\n"
                      "channel_exempt = [\"198.51.100.1\"]\n")
                .find("wg_config (a WireGuard channel to bring up) must then be empty"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"socks\"\n").find("channel_kind must be one of"),
            std::string::npos) << one_error("[daemon]\nchannel_kind = \"socks\"\n");
  for (const char* bad : {"\"proxy.example\"", "\"10.0.0.0/8\"", "\"1.2.3\"", "7"}) {
    const std::string text = std::string("[daemon]\nchannel_exempt = [") + bad + "]\n";
    EXPECT_NE(one_error(text).find("q.toml:2:19: channel_exempt: each must be an IPv4 or IPv6 "
                                   "address"),
              std::string::npos) << bad << ": " << one_error(text);
  }
}

TEST(PolicyConfigChannelKind, TproxyReadsItsPortAndProxyServersAndTakesLo) {
  const ConfigLoad load = parse_config(
      "[daemon]\nchannel_kind = \"tproxy\"\ntproxy_port = 1080\n"
      "channel_exempt = [\"203.0.113.7\"]\n",
      "q.toml");
  ASSERT_TRUE(load.ok()) << load.errors[0].to_string();
  const DaemonSettings& d = load.config.daemon;
  EXPECT_EQ(d.channel_kind, ChannelKind::tproxy);
  EXPECT_EQ(d.tproxy_port, 1080);
  EXPECT_EQ(d.channel_interface, "lo");
  EXPECT_TRUE(d.native_path_routed);
  EXPECT_EQ(to_string(d.channel_kind), "tproxy");
  // auto takes the routed path whatever the addressing (the proxy client sends).
  const ConfigLoad nat = parse_config(
      "[daemon]\nchannel_kind = \"tproxy\"\ntproxy_port = 1080\naddressing = \"nat\"\n"
      "channel_exempt = [\"203.0.113.7\"]\n",
      "q.toml");
  ASSERT_TRUE(nat.ok()) << nat.errors[0].to_string();
  EXPECT_TRUE(nat.config.daemon.native_path_routed);
}

TEST(PolicyConfigChannelKind, TproxyRefusesWhatCannotWork) {
  const std::string exempt = "channel_exempt = [\"203.0.113.7\"]\n";
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"tproxy\"\n" + exempt)
                .find("q.toml:2:16: channel_kind = \"tproxy\" needs tproxy_port"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"tproxy\"\ntproxy_port = 1080\n")
                .find("needs channel_exempt"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"tproxy\"\ntproxy_port = 1080\n"
                      "channel_interface = \"tun0\"\n" + exempt)
                .find("wg_config and channel_interface do not apply"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"tproxy\"\ntproxy_port = 1080\n"
                      "native_path = \"queue\"\n" + exempt)
                .find("routed native path only"),
            std::string::npos);
  EXPECT_NE(one_error("[daemon]\ntproxy_port = 1080\n")
                .find("q.toml:2:15: tproxy_port belongs to channel_kind = \"tproxy\""),
            std::string::npos) << one_error("[daemon]\ntproxy_port = 1080\n");
  EXPECT_NE(one_error("[daemon]\nchannel_kind = \"tproxy\"\ntproxy_port = 70000\n" + exempt)
                .find("tproxy_port must be an integer in 1..65535"),
            std::string::npos);
}

}  // namespace
}  // namespace quicstep::client::core

namespace quicstep::client::core {
namespace {

TEST(PolicyConfigChannelDns, UnsetTakesTheWgQuickFilesListedTurnsOnEmptyTurnsOff) {
  const ConfigLoad unset = parse_config("", "q.toml");
  EXPECT_FALSE(unset.config.daemon.channel_dns_set);
  const ConfigLoad set = parse_config(
      "[daemon]\nchannel_dns = [\"10.64.0.1\", \"FC00:BBBB::1\"]\n", "q.toml");
  ASSERT_TRUE(set.ok()) << set.errors[0].to_string();
  EXPECT_TRUE(set.config.daemon.channel_dns_set);
  EXPECT_EQ(set.config.daemon.channel_dns_v4, (std::vector<std::string>{"10.64.0.1"}));
  EXPECT_EQ(set.config.daemon.channel_dns_v6, (std::vector<std::string>{"fc00:bbbb::1"}));
  const ConfigLoad off = parse_config("[daemon]\nchannel_dns = []\n", "q.toml");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off.config.daemon.channel_dns_set);
  EXPECT_TRUE(off.config.daemon.channel_dns_v4.empty());
}

TEST(PolicyConfigChannelDns, RefusesNamesTwoOfAFamilyAndModesWithoutTheDeviceRules) {
  const auto error = [](const std::string& text) {
    const ConfigLoad load = parse_config(text, "q.toml");
    return load.errors.empty() ? std::string() : load.errors[0].to_string();
  };
  EXPECT_NE(error("[daemon]\nchannel_dns = [\"dns.example\"]\n")
                .find("q.toml:2:16: channel_dns: each must be an IPv4 or IPv6 address"),
            std::string::npos);
  EXPECT_NE(error("[daemon]\nchannel_dns = [\"10.0.0.1\", \"10.0.0.2\"]\n")
                .find("q.toml:2:15: channel_dns: at most one IPv4 and one IPv6 resolver"),
            std::string::npos);
  for (const char* addressing : {"nat", "permissive"}) {
    EXPECT_NE(error(std::string("[daemon]\naddressing = \"") + addressing +
                    "\"\nchannel_dns = [\"10.0.0.1\"]\n")
                  .find("channel_dns needs addressing = \"stateless\""),
              std::string::npos)
        << addressing;
    // Off is fine with any addressing.
    EXPECT_EQ(error(std::string("[daemon]\naddressing = \"") + addressing +
                    "\"\nchannel_dns = []\n"),
              "");
  }
}

}  // namespace
}  // namespace quicstep::client::core
