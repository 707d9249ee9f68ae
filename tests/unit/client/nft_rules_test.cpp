// The kernel half of quicstepd as text: the nft table, the iptables-nft queue rules, the
// flow-set elements, the ip rules, and the parsing of nft's JSON counters.
#include "client/kernel/nft_rules.hpp"

#include <gtest/gtest.h>

#include "client/kernel/kernel_rules.hpp"
#include "client/kernel/routing.hpp"
#include "support/outcome.hpp"

namespace quicstep::client::kernel {
namespace {

using quicstep::test_support::failure_text;

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// The rules of one chain: the lines between "chain NAME {" and its closing brace.
std::string chain(const std::string& text, const std::string& name) {
  const auto start = text.find("chain " + name + " {");
  if (start == std::string::npos) return {};
  return text.substr(start, text.find("\n  }\n", start) - start);
}

TEST(NftRules, DefaultSpecIsValid) { EXPECT_EQ(failure_text(check_spec(RulesetSpec{})), ""); }

TEST(NftRules, ReplacesTheTableInOneTransaction) {
  const std::string t = ruleset_text(RulesetSpec{});
  // create-if-absent, delete, create: one `nft -f` file is one transaction.
  EXPECT_EQ(t.rfind("table inet quicstep\ndelete table inet quicstep\ntable netdev quicstep\n"
                    "delete table netdev quicstep\ntable inet quicstep {", 0), 0u);
  EXPECT_EQ(delete_table_text("quicstep"), "table inet quicstep\ndelete table inet quicstep\n"
                                           "table netdev quicstep\ndelete table netdev quicstep\n");
}

TEST(NftRules, SendsDnsTcpLongHeadersAndFragmentsToTheChannel) {
  const std::string t = ruleset_text(RulesetSpec{});
  const std::string decide = chain(t, "out_decide");
  EXPECT_TRUE(has(decide, "type route hook output priority -310"));
  EXPECT_TRUE(has(decide, "udp dport 53 goto to_channel"));
  EXPECT_TRUE(has(decide, "tcp sport 53 goto to_channel"));
  EXPECT_TRUE(has(decide, "meta l4proto tcp goto to_channel"));
  EXPECT_TRUE(has(decide, "ip frag-off & 0x3fff != 0 goto to_channel"));
  EXPECT_TRUE(has(decide, "exthdr frag exists goto to_channel"));
  EXPECT_TRUE(has(decide, "udp dport 443 goto quic_out"));
  // The bulk path's rule comes first: a decided flow's short headers, 255 in 256 of them (the
  // rest refresh the element in quic_out), UDP, at least 32 bytes (the sample's load); no
  // port or fragment compare (implied by the set and the transport-header loads); only
  // inline expressions but for the length bound and the lookup.
  EXPECT_LT(decide.find("meta nfproto ipv4 meta l4proto udp udp length <= 1480 @th,64,32 & "
                        "0x80000000 == 0 @th,224,32 & 0xff0000 != 0 ip saddr . udp sport . ip "
                        "daddr . udp dport @native4 notrack counter return comment "
                        "\"native_out\""),
            decide.find("meta oif lo return"));
  EXPECT_TRUE(has(decide, "meta nfproto ipv6 meta l4proto udp udp length <= 1460 @th,64,32 & "
                          "0x80000000 == 0 @th,224,32 & 0xff0000 != 0 ip6 saddr . udp sport . "
                          "ip6 daddr . udp dport @native6"));
  const std::string quic = chain(t, "quic_out");
  // Every rule ends in the channel, the queue, or (only) a native-set match; the chain
  // falls off its end nowhere.
  EXPECT_TRUE(has(quic, "udp length < 29 goto to_channel"));
  EXPECT_LT(quic.find("@th,64,1 1 goto to_channel"), quic.find("@native4"));
  EXPECT_TRUE(quic.substr(quic.rfind("\n    ")).find("goto decide_out") != std::string::npos);
  EXPECT_EQ(quic.find("meta mark set"), std::string::npos);  // native fast path: no re-route
  EXPECT_TRUE(has(chain(t, "to_channel"), "meta mark set meta mark & 0xffffff00 | 0x51"));
  // GSO super-packets are queued (segment by segment) before the native set, and the
  // bulk-path rule leaves them alone (gso_native_fast off, the default).
  EXPECT_LT(quic.find("meta length > 1500 goto decide_out"), quic.find("@native4"));
  EXPECT_TRUE(has(decide, "udp length <= 1480 @th,64,32"));
  EXPECT_FALSE(has(decide, "meta length"));  // the UDP length bound stands for it
  // Decided flows: untracked; about one packet in 256 (a pseudo-random byte zero)
  // refreshes the element; anonymous counters named by comment.
  EXPECT_TRUE(has(quic, "@th,224,32 & 0xff0000 != 0 ip6 saddr . udp sport . ip6 daddr . udp dport "
                        "@native6 notrack counter return comment \"native_out\""));
  EXPECT_TRUE(has(quic, "ip6 saddr . udp sport . ip6 daddr . udp dport @native6 update @native6 "
                        "{ ip6 saddr . udp sport . ip6 daddr . udp dport } notrack counter return "
                        "comment \"native_out\""));
  EXPECT_LT(quic.find("@th,224,32 & 0xff0000 != 0 ip saddr"), quic.find("update @native4"));
  // Decided flows refresh their element: sets are dynamic with timeouts.
  EXPECT_TRUE(has(t, "set native4 {\n    type ipv4_addr . inet_service . ipv4_addr . inet_service\n"
                     "    flags dynamic,timeout\n    timeout 120s\n    size 65536\n  }"));
  EXPECT_TRUE(has(t, "chain decide_out {\n    counter name \"decide_out\"\n    meta mark set meta mark & 0xffffff00 | 0x53"));
}

TEST(NftRules, ObservedHandshakesAreQueuedAndStillGoToTheChannel) {
  RulesetSpec s;
  s.nat = s.stateless = true;
  s.tunnel_v4 = "10.0.0.2";
  s.observe_handshakes = true;
  const std::string t = ruleset_text(s);
  // Outbound long headers: queued with the DECIDE_OUT mark (routed to the channel; the
  // daemon's verdict is the channel, and so is queue bypass), before any native-set match.
  const std::string quic = chain(t, "quic_out");
  EXPECT_LT(quic.find("@th,64,1 1 goto decide_out"), quic.find("@native4"));
  EXPECT_FALSE(has(quic, "@th,64,1 1 goto to_channel"));
  // Inbound: the server's long headers arriving on the channel are queued (observed), the
  // rest of the channel leaves the base chain (a goto: from_channel's end ends in_watch);
  // one interface-name compare for every inbound packet.
  const std::string in = chain(t, "in_watch");
  EXPECT_LT(in.find("iifname \"qs-wg0\" goto from_channel"), in.find("udp sport 443"));
  EXPECT_EQ(in.find("iifname"), in.rfind("iifname"));
  EXPECT_EQ(chain(t, "from_channel"),
            "chain from_channel {\n    udp sport 443 @th,64,1 1 goto observe_in");
  EXPECT_TRUE(has(chain(t, "observe_in"), "meta mark set meta mark & 0xffffff00 | 0x54"));
  // Off (the default): no queueing of long headers, no observe chain.
  s.observe_handshakes = false;
  const std::string off = ruleset_text(s);
  EXPECT_TRUE(has(chain(off, "quic_out"), "@th,64,1 1 goto to_channel"));
  EXPECT_FALSE(has(off, "observe_in"));
}

TEST(NftRules, PolicyTogglesAndPorts) {
  RulesetSpec s;
  s.dns_to_channel = false;
  s.tcp_to_channel = false;
  s.other_udp_to_channel = true;
  s.quic_ports = {443, 8443};
  const std::string decide = chain(ruleset_text(s), "out_decide");
  EXPECT_FALSE(has(decide, "dport 53"));
  EXPECT_FALSE(has(decide, "meta l4proto tcp goto"));
  EXPECT_TRUE(has(decide, "udp dport { 443, 8443 } goto quic_out"));
  EXPECT_TRUE(has(decide, "meta l4proto udp goto to_channel"));
}

TEST(NftRules, NatModeUntracksNativeAndMasqueradesTheChannel) {
  RulesetSpec s;
  s.channel_interface = "qsw-client";
  std::string t = ruleset_text(s);
  // One verdict map after the queue; a NATIVE verdict is untracked (no channel NAT binding
  // can apply to it), channel packets are tracked (masquerade) without zones.
  EXPECT_TRUE(has(chain(t, "out_account"), "priority -250"));
  EXPECT_TRUE(has(chain(t, "out_account"), "meta mark & 0xff vmap { 0x51 : goto account_channel, "
                                           "0x53 : goto account_channel, 0x52 : goto account_native }"));
  EXPECT_TRUE(has(chain(t, "account_native"), "counter name \"native_out\" notrack"));
  EXPECT_TRUE(has(chain(t, "in_watch"), "udp sport 443 notrack counter udp dport @watchports "
                                        "goto in_watched comment \"native_in\""));
  EXPECT_FALSE(has(t, "ct zone"));
  EXPECT_TRUE(has(chain(t, "in_watch"), "iifname \"qsw-client\" goto from_channel"));
  EXPECT_TRUE(has(chain(t, "from_channel"), "    counter name \"channel_in\" accept"));
  EXPECT_TRUE(has(chain(t, "post_nat"), "oifname \"qsw-client\" masquerade"));
  // After masquerade, only the interface's own addresses leave into it (IPv6 masquerade
  // would take a native address while the interface has none); no address: none leave.
  EXPECT_TRUE(has(chain(t, "post_nat_source"), "priority srcnat + 1;"));
  EXPECT_TRUE(has(chain(t, "post_nat_source"),
                  "oifname \"qsw-client\" meta nfproto ipv6 meta l4proto { tcp, udp } counter "
                  "name \"channel_foreign_source\" drop"));
  EXPECT_TRUE(has(t, "  counter channel_foreign_source {\n  }\n"));
  s.channel_sources_v4 = {"10.0.0.2"};
  s.channel_sources_v6 = {"fd00::2", "fd00::3"};
  t = ruleset_text(s);
  EXPECT_TRUE(has(chain(t, "post_nat_source"),
                  "oifname \"qsw-client\" meta nfproto ipv4 meta l4proto { tcp, udp } ip saddr "
                  "!= { 10.0.0.2 } counter name \"channel_foreign_source\" drop"));
  EXPECT_TRUE(has(chain(t, "post_nat_source"),
                  "meta l4proto { tcp, udp } ip6 saddr != { fd00::2, fd00::3 } counter name "
                  "\"channel_foreign_source\" drop"));
  s.channel_sources_v6 = {"fd00::2; flush ruleset"};
  EXPECT_EQ(failure_text(check_spec(s)), "bad channel address `fd00::2; flush ruleset'");
  s.channel_sources_v6 = {"fd00::2"};
  // track_native: conntrack sees native packets; zone 1 keeps channel NAT bindings apart.
  s.track_native = true;
  t = ruleset_text(s);
  EXPECT_FALSE(has(t, "notrack"));
  EXPECT_TRUE(has(chain(t, "account_channel"), "counter name \"channel_out\" ct zone set 1"));
  EXPECT_TRUE(has(chain(t, "from_channel"), "    counter name \"channel_in\" ct zone set 1 accept"));
  s.nat = false;  // permissive: no zones, no NAT
  t = ruleset_text(s);
  EXPECT_FALSE(has(t, "ct zone"));
  EXPECT_FALSE(has(t, "masquerade"));
}

// Stateless addressing on the lab's channel device, with a tunnel address of each family.
RulesetSpec stateless_spec() {
  RulesetSpec s;
  s.channel_interface = "qsw-client";
  s.stateless = true;
  s.tunnel_v4 = "10.77.0.2";
  s.tunnel_v6 = "fd77::2";
  return s;
}

TEST(NftRules, StatelessNatRewritesWithoutConntrack) {
  RulesetSpec s = stateless_spec();
  ASSERT_EQ(failure_text(check_spec(s)), "");
  std::string t = ruleset_text(s);
  // No nat chain, no ct expression: conntrack's hooks are never registered by this table.
  EXPECT_FALSE(has(t, "masquerade"));
  EXPECT_FALSE(has(t, "type nat"));
  EXPECT_FALSE(has(t, "ct "));
  EXPECT_TRUE(has(t, "map rev4 {\n    type inet_service . inet_service . ipv4_addr : ipv4_addr\n"));
  EXPECT_TRUE(has(t, "map rev6 {\n    type inet_service . inet_service . ipv6_addr : ipv6_addr\n"));
  // The channel device's own table: its chains see only packets that cross the WireGuard
  // interface; the output path has no after-queue chain at all.
  const std::string dev = t.substr(t.find("table netdev quicstep {"));
  EXPECT_TRUE(has(dev, "map rev4 {\n    type inet_service . inet_service . ipv4_addr : ipv4_addr\n"));
  EXPECT_TRUE(has(dev, "map rev6 {\n    type inet_service . inet_service . ipv6_addr : ipv6_addr\n"));
  EXPECT_EQ(t.find("type filter hook output priority -250"), std::string::npos);
  EXPECT_EQ(t.find("account_channel"), std::string::npos);
  // Out: learn the local address, then write the tunnel address.
  const std::string out = chain(dev, "channel_egress");
  EXPECT_TRUE(has(out, "type filter hook egress device \"qsw-client\" priority 0;"));
  EXPECT_TRUE(has(out, "counter name \"channel_out\""));
  EXPECT_TRUE(has(out, "ip saddr != 10.77.0.2 meta l4proto { tcp, udp } update @rev4 "
                       "{ th sport . th dport . ip daddr : ip saddr }"));
  EXPECT_TRUE(has(out, "ip saddr != 10.77.0.2 update @revany4 { ip daddr : ip saddr } "
                       "ip saddr set 10.77.0.2"));
  EXPECT_TRUE(has(out, "ip6 saddr set fd77::2"));
  EXPECT_LT(out.find("update @rev4"), out.find("ip saddr set"));
  // udp_source_by_guard (routed): the maps still learn UDP, but its source is the guard's to
  // set (a BPF program after this chain: UDP GSO checksums), everything else's still here.
  {
    RulesetSpec g = s;
    g.routed = true;
    g.udp_source_by_guard = true;
    const std::string gout = chain(ruleset_text(g).substr(ruleset_text(g).find(
                                       "table netdev quicstep {")),
                                   "channel_egress");
    EXPECT_TRUE(has(gout, "ip saddr != 10.77.0.2 meta l4proto { tcp, udp } update @rev4 "));
    EXPECT_TRUE(has(gout, "ip saddr != 10.77.0.2 update @revany4 { ip daddr : ip saddr }\n"));
    EXPECT_TRUE(has(gout, "ip saddr != 10.77.0.2 meta l4proto != udp ip saddr set 10.77.0.2\n"));
    EXPECT_TRUE(has(gout, "ip6 saddr != fd77::2 meta l4proto != udp ip6 saddr set fd77::2"));
    EXPECT_FALSE(has(gout, "} ip saddr set"));
    // Only the routed path has the guard: the queue path (an "auto" that fell back after
    // the flag was set) still has nft set UDP's source.
    g.routed = false;
    EXPECT_FALSE(has(ruleset_text(g), "meta l4proto != udp"));
  }
  // In: from the channel interface to the tunnel address, back to the learnt address; the
  // inet table's prerouting chain lets channel packets go (counted at the device).
  EXPECT_TRUE(has(chain(t, "in_watch"), "iifname \"qsw-client\" return"));
  const std::string in = chain(dev, "channel_ingress");
  EXPECT_TRUE(has(in, "type filter hook ingress device \"qsw-client\" priority 0;"));
  EXPECT_TRUE(has(in, "counter name \"channel_in\""));
  EXPECT_TRUE(has(in, "ip daddr 10.77.0.2 meta l4proto { tcp, udp } ip daddr set th dport . "
                      "th sport . ip saddr map @rev4 accept"));
  EXPECT_TRUE(has(in, "ip6 daddr fd77::2 ip6 daddr set ip6 saddr map @revany6 accept"));
  EXPECT_LT(in.find("map @rev4 "), in.find("map @revany4 "));
  // track_native: still no zones (no NAT binding to keep apart).
  s.track_native = true;
  EXPECT_FALSE(has(ruleset_text(s), "ct zone"));
  // A family without a tunnel address: its channel packets are dropped, not sent native.
  s.tunnel_v6.clear();
  t = ruleset_text(s);
  EXPECT_TRUE(has(chain(t.substr(t.find("table netdev")), "channel_egress"),
                  "meta protocol ip6 drop"));
  EXPECT_FALSE(has(t, "ip6 saddr set"));
  s.tunnel_v4 = "10.77.0.0/24";
  EXPECT_NE(failure_text(check_spec(s)), "");
  // Permissive wins over stateless: no rewrite at all.
  s.tunnel_v4 = "10.77.0.2";
  s.nat = false;
  EXPECT_FALSE(has(ruleset_text(s), "saddr set"));
  EXPECT_FALSE(has(ruleset_text(s), "table netdev quicstep {"));
}

TEST(NftRules, TheChannelsDnsTakesEveryQueryEnteringTheChannel) {
  RulesetSpec s = stateless_spec();
  // Off (no channel DNS): no map, no rule, no counter.
  EXPECT_FALSE(has(ruleset_text(s), "dns"));
  s.channel_dns_v4 = "10.64.0.1";
  s.channel_dns_v6 = "fd64::1";
  ASSERT_EQ(failure_text(check_spec(s)), "");
  for (const bool routed : {false, true}) {
    s.routed = s.udp_source_by_guard = routed;
    const std::string t = ruleset_text(s);
    const std::string dev = t.substr(t.find("table netdev quicstep {"));
    EXPECT_TRUE(has(dev, "counter dns_redirected {"));
    EXPECT_TRUE(has(dev, "map dns4 {\n    type inet_service : ipv4_addr\n"));
    EXPECT_TRUE(has(dev, "map dnsfrag6 {\n    typeof frag id : ip6 saddr\n"));
    // Out: every query remembers the address it was sent to (by its port), then goes to the
    // channel's resolver; after the reverse maps learnt the address asked.
    const std::string out = chain(dev, "channel_egress");
    const std::string remember =
        "meta protocol ip meta l4proto { tcp, udp } th dport 53 update @dns4 { th sport : ip "
        "daddr }";
    const std::string redirect =
        "meta protocol ip meta l4proto { tcp, udp } th dport 53 ip daddr != 10.64.0.1 counter "
        "name \"dns_redirected\" ip daddr set 10.64.0.1";
    EXPECT_TRUE(has(out, remember)) << out;
    EXPECT_TRUE(has(out, redirect)) << out;
    EXPECT_TRUE(has(out, "ip6 daddr != fd64::1 counter name \"dns_redirected\" ip6 daddr set "
                         "fd64::1"));
    EXPECT_LT(out.find("update @rev4"), out.find(remember));
    EXPECT_LT(out.find(remember), out.find(redirect));
    // In: the answer's source becomes the address asked, before the reverse maps (keyed by
    // it) give the destination back; fragments after the first follow the first.
    const std::string in = chain(dev, "channel_ingress");
    const std::string answer =
        "ip daddr 10.77.0.2 ip saddr 10.64.0.1 meta l4proto { tcp, udp } th sport 53 ip saddr "
        "set th dport map @dns4";
    EXPECT_TRUE(has(in, answer)) << in;
    EXPECT_LT(in.find(answer), in.find("map @rev4"));
    EXPECT_TRUE(has(in, "ip daddr 10.77.0.2 ip frag-off & 0x3fff == 0x2000 udp sport 53 update "
                        "@dnsfrag4 { ip id : ip saddr }"));
    EXPECT_TRUE(has(in, "ip daddr 10.77.0.2 ip saddr 10.64.0.1 ip frag-off & 0x1fff != 0 ip "
                        "saddr set ip id map @dnsfrag4"));
    EXPECT_TRUE(has(in, "ip6 daddr fd77::2 ip6 saddr fd64::1 ip6 nexthdr ipv6-frag frag "
                        "frag-off != 0 ip6 saddr set @nh,352,32 map @dnsfrag6"));
    EXPECT_LT(in.find("@dnsfrag4 { ip id"), in.find("ip saddr set ip id map"));
  }
  // One family only: the other's queries keep their resolver.
  s.channel_dns_v6.clear();
  EXPECT_FALSE(has(chain(ruleset_text(s), "channel_egress"), "ip6 daddr set"));
  s.channel_dns_v4 = "10.64.0.0/24";
  EXPECT_NE(failure_text(check_spec(s)), "");
}

TEST(NftRules, WatchSetMatchesInboundInOutboundOrientation) {
  const std::string t = ruleset_text(RulesetSpec{});
  EXPECT_TRUE(has(chain(t, "in_watched"), "ip daddr . udp dport . ip saddr . udp sport @watch4 goto watch_in"));
  EXPECT_TRUE(has(chain(t, "watch_in"), "| 0x54"));
  // Only a watched port's packets reach the watch set: every native answer is counted, then
  // meets the port bitmap (no flags, a 2-octet key).
  EXPECT_TRUE(has(chain(t, "in_watch"), "counter udp dport @watchports goto in_watched comment "
                                        "\"native_in\""));
  EXPECT_TRUE(has(t, "  set watchports {\n    type inet_service\n  }\n"));
}

TEST(NftRules, WatchedPortElements) {
  common::FlowKey k;
  k.client = common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
  k.server = common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3});
  k.client_port = 40000;  // 0x9c40
  k.server_port = 443;
  EXPECT_EQ(set_name(FlowSet::watch_port, k), "watchports");
  EXPECT_EQ(set_element_key(FlowSet::watch_port, k), (std::vector<std::uint8_t>{0x9c, 0x40}));
  EXPECT_EQ(set_element_key(FlowSet::watch, k), set_element_key(k));
  EXPECT_EQ(add_element_text("quicstep", FlowSet::watch_port, k, std::chrono::seconds(5)),
            "add element inet quicstep watchports { 40000 }\n");
  EXPECT_EQ(delete_element_text("quicstep", FlowSet::watch_port, k),
            "delete element inet quicstep watchports { 40000 }\n");
}

TEST(NftRules, ExemptsTheChannelEndpoint) {
  RulesetSpec s;
  s.exempt_v4 = {"198.18.3.2"};
  s.exempt_v6 = {"2001:db8:3::2"};
  const std::string decide = chain(ruleset_text(s), "out_decide");
  EXPECT_LT(decide.find("ip daddr { 198.18.3.2 } return"), decide.find("goto to_channel"));
  EXPECT_TRUE(has(decide, "ip6 daddr { 2001:db8:3::2 } return"));
}

TEST(NftRules, NativePrefixesSkipTheChannelExceptDns) {
  RulesetSpec s;
  EXPECT_FALSE(has(chain(ruleset_text(s), "out_decide"), "192.168"));  // none by default
  s.native_v4 = {"192.168.0.0/16"};
  s.native_v6 = {"fd00::/8"};
  const std::string decide = chain(ruleset_text(s), "out_decide");
  const std::string lan4 = "ip daddr { 192.168.0.0/16 }";
  // DNS to the prefixes first, each port in its own rule, then everything else unmarked.
  for (const char* dns : {" udp dport 53", " udp sport 53", " tcp dport 53", " tcp sport 53"}) {
    EXPECT_LT(decide.find(lan4 + dns + " goto to_channel"), decide.find(lan4 + " return"));
    EXPECT_TRUE(has(decide, std::string("ip6 daddr { fd00::/8 }") + dns + " goto to_channel"));
  }
  EXPECT_TRUE(has(decide, "ip6 daddr { fd00::/8 } return"));
  // Never two negated port compares in one rule: nft 1.0.6 merges "dport != 53 sport != 53"
  // into one compare of both ports (true unless both are 53), which let DNS go native.
  EXPECT_FALSE(has(decide, "!= 53"));
  // After the fragment rules (a non-first fragment has no port: it could be DNS), before
  // the QUIC, DNS and TCP rules.
  EXPECT_LT(decide.find("exthdr frag exists"), decide.find(lan4));
  EXPECT_LT(decide.find(lan4), decide.find("goto quic_out"));
  EXPECT_EQ(failure_text(check_spec(s)), "");
  s.native_v4 = {"192.168.0.0/16; flush ruleset"};
  EXPECT_NE(failure_text(check_spec(s)), "");
}

TEST(NftRules, CheckSpecRefusesBadValues) {
  RulesetSpec s;
  s.mark_decide_out = s.mark_channel;
  EXPECT_NE(failure_text(check_spec(s)).find("distinct"), std::string::npos);
  s = {};
  s.mark_native = 0x100;  // outside the mask
  EXPECT_NE(failure_text(check_spec(s)).find("outside the mask"), std::string::npos);
  s = {};
  s.channel_interface = "bad name; rm";
  EXPECT_NE(failure_text(check_spec(s)).find("`bad name; rm'"), std::string::npos);
  s = {};
  s.quic_ports = {};
  EXPECT_NE(failure_text(check_spec(s)), "");
  s = {};
  s.exempt_v4 = {"1.2.3.4 } accept"};
  EXPECT_NE(failure_text(check_spec(s)), "");
}

TEST(NftRules, IptablesQueuesTheOutboundMarkWithBypass) {
  RulesetSpec s;
  s.queue_outbound = 7;
  s.queue_inbound = 9;
  const std::string t = iptables_install_text(s);
  EXPECT_TRUE(has(t, "-I OUTPUT 1 -m mark --mark 0x53/0xff -m comment --comment quicstepd -j "
                     "NFQUEUE --queue-num 7 --queue-bypass"));
  // Inbound packets are queued from the table's own chains (no base chain for every packet).
  EXPECT_FALSE(has(t, "PREROUTING"));
  // No user chain: a jump costs every packet a counter and the jump.
  EXPECT_FALSE(has(t, "-j QUICSTEP"));
  EXPECT_FALSE(has(t, ":"));
  EXPECT_EQ(t.rfind("*raw\n", 0), 0u);
  EXPECT_TRUE(has(iptables_remove_legacy_text(), "-X QUICSTEP_OUT"));
}

TEST(NftRules, InboundQueueRulesEndTheChainsThatPickThePackets) {
  RulesetSpec s;
  s.observe_handshakes = false;
  EXPECT_EQ(inbound_queue_chains(s), std::vector<std::string>{"watch_in"});
  s.observe_handshakes = true;
  EXPECT_EQ(inbound_queue_chains(s), (std::vector<std::string>{"watch_in", "observe_in"}));
  // Each of them exists in the table and marks DECIDE_IN before the queue rule is appended.
  const std::string t = ruleset_text(s);
  for (const auto& c : inbound_queue_chains(s)) {
    EXPECT_TRUE(has(chain(t, c), "meta mark set meta mark & 0xffffff00 | 0x54")) << c;
  }
}

TEST(NftRules, IptablesRemovalDeletesOnlyTaggedRules) {
  // Earlier versions also had a PREROUTING rule: removed on upgrade like the rest.
  // As `iptables-nft -t raw -S` lists them, with someone else's rule in between.
  const std::string listing =
      "-P PREROUTING ACCEPT\n-P OUTPUT ACCEPT\n"
      "-A PREROUTING -m mark --mark 0x54/0xff -m comment --comment quicstepd -j NFQUEUE "
      "--queue-num 1 --queue-bypass\n"
      "-A OUTPUT -p udp -m comment --comment \"quicstepd look-alike\" -j CT --notrack\n"
      "-A OUTPUT -m mark --mark 0x53/0xff -m comment --comment quicstepd -j NFQUEUE "
      "--queue-num 0 --queue-bypass\n"
      "-A OUTPUT -p tcp -j CT --notrack\n";
  const std::string t = iptables_remove_text(listing);
  EXPECT_EQ(t,
            "*raw\n"
            "-D PREROUTING -m mark --mark 0x54/0xff -m comment --comment quicstepd -j NFQUEUE "
            "--queue-num 1 --queue-bypass\n"
            "-D OUTPUT -m mark --mark 0x53/0xff -m comment --comment quicstepd -j NFQUEUE "
            "--queue-num 0 --queue-bypass\nCOMMIT\n");
  EXPECT_EQ(iptables_remove_text("-P OUTPUT ACCEPT\n-A OUTPUT -p tcp -j CT --notrack\n"), "");
}

TEST(NftRules, GsoOfNativeFlowsInTheKernelWhenAskedFor) {
  RulesetSpec s;
  s.gso_native_fast = true;
  const std::string t = ruleset_text(s);
  const std::string quic = chain(t, "quic_out");
  // The opt-in: GSO super-packets of a flow in the native set stay native; the rest are
  // queued before the channel set or the end.
  EXPECT_GT(quic.find("meta length > 1500 goto decide_out"), quic.rfind("@native6"));
  EXPECT_LT(quic.find("meta length > 1500 goto decide_out"), quic.find("@channel4"));
  EXPECT_EQ(quic.find("meta length"), quic.rfind("meta length"));  // once
  EXPECT_FALSE(has(chain(t, "out_decide"), "length <="));  // no bound in the bulk rule
  EXPECT_TRUE(has(chain(t, "out_decide"), "meta nfproto ipv4 meta l4proto udp @th,64,32"));
}

TEST(NftRules, SetElementKeysUseOneRegisterPerField) {
  common::FlowKey k;
  k.client = common::IpAddress::v4({198, 18, 1, 2});
  k.server = common::IpAddress::v4({198, 18, 10, 10});
  k.client_port = 40000;  // 0x9c40
  k.server_port = 443;    // 0x01bb
  const std::vector<std::uint8_t> v4 = {198, 18, 1, 2, 0x9c, 0x40, 0, 0,
                                        198, 18, 10, 10, 0x01, 0xbb, 0, 0};
  EXPECT_EQ(set_element_key(k), v4);
  EXPECT_EQ(set_name(FlowSet::watch, k), "watch4");
  k.client = common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
  k.server = common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10});
  const auto v6 = set_element_key(k);
  ASSERT_EQ(v6.size(), 40u);
  EXPECT_EQ(v6[16], 0x9c);
  EXPECT_EQ(v6[18], 0);
  EXPECT_EQ(v6[20], 0x20);
  EXPECT_EQ(v6[36], 0x01);
  EXPECT_EQ(v6[37], 0xbb);
  EXPECT_EQ(set_name(FlowSet::native, k), "native6");
  EXPECT_EQ(element_op_text("quicstep", {false, FlowSet::native, k, {}}),
            delete_element_text("quicstep", FlowSet::native, k));
}

TEST(NftRules, Elements) {
  common::FlowKey k;
  k.client = common::IpAddress::v4({198, 18, 1, 2});
  k.server = common::IpAddress::v4({198, 18, 10, 10});
  k.client_port = 40000;
  k.server_port = 443;
  k.protocol = 17;
  EXPECT_EQ(add_element_text("quicstep", FlowSet::native, k, std::chrono::seconds(120)),
            "add element inet quicstep native4 { 198.18.1.2 . 40000 . 198.18.10.10 . 443 timeout 120s }\n");
  k.client = common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
  k.server = common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10});
  EXPECT_EQ(delete_element_text("quicstep", FlowSet::watch, k),
            "delete element inet quicstep watch6 { 2001:db8:1::2 . 40000 . 2001:db8:10::10 . 443 }\n");
}

TEST(NftRules, RoutingFailsClosedAfterEachLookup) {
  RoutingSpec r;
  r.channel_marks = {0x51, 0x53};
  const auto cmds = routing_commands(r);
  ASSERT_EQ(cmds.size(), 8u);  // 2 marks x (lookup + unreachable) x 2 families
  const std::vector<std::string> lookup = {"ip", "-4", "rule", "add", "fwmark", "0x51/0xff",
                                           "lookup", "51820", "priority", "10100"};
  const std::vector<std::string> closed = {"ip", "-4", "rule", "add", "fwmark", "0x51/0xff",
                                           "unreachable", "priority", "10101"};
  EXPECT_EQ(cmds[0], lookup);
  EXPECT_EQ(cmds[1], closed);
  EXPECT_EQ(cmds[4][1], "-6");
}

TEST(NftRules, ParsesKernelCounters) {
  const std::string json = R"({"nftables": [{"metainfo": {"version": "1.0.6"}},
    {"counter": {"family": "inet", "name": "channel_out", "table": "quicstep", "handle": 1,
                 "packets": 12, "bytes": 3456}},
    {"counter": {"family": "inet", "name": "native_out", "table": "quicstep", "handle": 2,
                 "packets": 7000, "bytes": 9000000}},
    {"rule": {"family": "inet", "table": "quicstep", "chain": "quic_out", "handle": 9,
              "comment": "native_out", "expr": [{"notrack": null},
              {"counter": {"packets": 5, "bytes": 100}}, {"return": null}]}},
    {"rule": {"family": "inet", "table": "quicstep", "chain": "in_watch", "handle": 10,
              "comment": "native_in", "expr": [{"counter": {"packets": 3, "bytes": 30}}]}},
    {"rule": {"family": "inet", "table": "quicstep", "chain": "x", "handle": 11,
              "expr": [{"counter": {"packets": 1, "bytes": 1}}]}}]})";
  auto c = parse_kernel_counters(json);
  ASSERT_EQ(c.size(), 3u);  // the rule without a comment is not a named counter
  EXPECT_EQ(c["channel_out"].bytes, 3456u);
  EXPECT_EQ(c["native_out"].packets, 7005u);  // the named object and the rule's counter
  EXPECT_EQ(c["native_out"].bytes, 9000100u);
  EXPECT_EQ(c["native_in"].bytes, 30u);
  // nft's warnings (stderr, interleaved) before and after the document are skipped.
  const std::string warn = "warning: stmt ops map have no json callback\n";
  auto w = parse_kernel_counters(warn + json + "\n" + warn);
  EXPECT_EQ(w["channel_out"].bytes, 3456u);
  EXPECT_EQ(w["native_out"].packets, 7005u);
  EXPECT_TRUE(parse_kernel_counters("not json").empty());
  EXPECT_TRUE(parse_kernel_counters(R"({"nftables": 3})").empty());
}

}  // namespace
}  // namespace quicstep::client::kernel

namespace quicstep::client::kernel {
namespace {

using quicstep::test_support::failure_text;

// The routed native path: the channel device's table, copies of the channel's QUIC to the
// log group; the flows' table marks QUIC outside the moved flows' sets for the channel.
TEST(NftRulesRouted, TheDeviceTableCopiesQuicAndTheFlowsNotMovedAreMarkedForTheChannel) {
  RulesetSpec s;
  s.channel_interface = "qsw-client";
  s.stateless = true;
  s.routed = true;
  s.log_group = 7;
  s.quic_ports = {443, 8443};
  s.tunnel_v4 = "10.77.0.2";
  s.tunnel_v6 = "fd77::2";
  ASSERT_EQ(failure_text(check_spec(s)), "");
  const std::string t = ruleset_text(s);
  EXPECT_TRUE(has(t, "delete table inet quicstep"));  // a queue path's table goes
  // The inet table holds only the native flows' sets and the two chains that mark them.
  EXPECT_TRUE(has(t, "set routed4 {\n    type ipv4_addr . inet_service . inet_service\n"));
  EXPECT_TRUE(has(t, "set routed6 {\n    type ipv6_addr . inet_service . inet_service\n"));
  EXPECT_FALSE(has(t, "set native4"));
  EXPECT_FALSE(has(t, "queue"));
  // Only QUIC meets the flows' chain; what comes from the channel is not sent back into it.
  EXPECT_TRUE(has(chain(t, "routed_out"), "type route hook output priority -301;"));
  const std::string out_chain = chain(t, "routed_out");
  EXPECT_TRUE(has(out_chain, "\n    udp dport { 443, 8443 } ip daddr . udp sport . udp dport "
                             "@routed4 return\n")) << out_chain;
  EXPECT_TRUE(has(out_chain, "\n    udp dport { 443, 8443 } goto quic_route\n")) << out_chain;
  // The kernel's own refusals of a QUIC datagram too long for the channel end there (they
  // would set the native route's MTU: routed_flows_test).
  EXPECT_TRUE(has(out_chain,
      "\n    meta oif lo icmp type destination-unreachable icmp code frag-needed @th,136,8 17 "
      "@th,240,16 { 443, 8443 } drop\n    meta oif lo icmpv6 type packet-too-big @th,112,8 17 "
      "@th,400,16 { 443, 8443 } drop\n")) << out_chain;
  // DNS that the first route sent past the channel (a socket naming its interface,
  // IP_UNICAST_IF) is routed again by the channel mark, but not a local resolver's (lo) or
  // one to the channel's endpoint; last, after every QUIC rule.
  EXPECT_TRUE(out_chain.ends_with(
      "\n    meta l4proto { tcp, udp } th dport 53 meta oifname != { \"qsw-client\", \"lo\" } "
      "goto dns_route")) << out_chain;
  EXPECT_TRUE(has(t, "  counter dns_rerouted {\n  }\n"));
  const std::string dns_route = chain(t, "dns_route");
  EXPECT_TRUE(has(dns_route, "counter name \"dns_rerouted\" meta mark set meta mark & "
                             "0xffffff00 | 0x51")) << dns_route;
  {
    RulesetSpec exempt = s;
    exempt.exempt_v4 = {"203.0.113.9"};
    const std::string ex_route = chain(ruleset_text(exempt), "dns_route");
    ASSERT_TRUE(has(ex_route, "\n    ip daddr { 203.0.113.9 } return\n")) << ex_route;
    EXPECT_LT(ex_route.find("203.0.113.9 } return"), ex_route.find("dns_rerouted")) << ex_route;
  }
  {
    RulesetSpec no_dns = s;
    no_dns.dns_to_channel = false;  // DNS may leave natively: nothing to route again
    EXPECT_FALSE(has(ruleset_text(no_dns), "dns_route"));
    EXPECT_FALSE(has(ruleset_text(no_dns), "dns_rerouted"));
  }
  // The hold at the switch: a switching flow's short headers go to the outbound queue's
  // chain, after the moved flows and before the channel's mark.
  EXPECT_FALSE(has(t, "switching4")) << t;
  EXPECT_TRUE(hold_queue_chains(s).empty());
  s.switch_hold = true;
  const std::string held = ruleset_text(s);
  s.switch_hold = false;
  EXPECT_TRUE(has(held, "set switching4 {\n    type ipv4_addr . inet_service . inet_service\n"
                        "    flags timeout\n    timeout 30s\n")) << held;
  EXPECT_TRUE(has(held, "set switching6 {\n    type ipv6_addr")) << held;
  const std::string held_out = chain(held, "routed_out");
  const auto moved = held_out.find("@routed6 return");
  const auto hold4 = held_out.find(
      "udp dport { 443, 8443 } ip daddr . udp sport . udp dport @switching4 @th,64,1 0 goto "
      "hold_queue\n");
  const auto hold6 = held_out.find("@switching6 @th,64,1 0 goto hold_queue\n");
  const auto to_channel = held_out.find("goto quic_route");
  ASSERT_NE(hold4, std::string::npos) << held_out;
  ASSERT_NE(hold6, std::string::npos) << held_out;
  EXPECT_LT(moved, hold4);
  EXPECT_LT(hold6, to_channel);
  EXPECT_TRUE(has(held, "  chain hold_queue {\n  }\n")) << held;  // its rule: netlink
  s.switch_hold = true;
  EXPECT_EQ(hold_queue_chains(s), std::vector<std::string>{"hold_queue"});
  s.tproxy_port = 12345;  // a tproxy channel has no hold (its QUIC is routed by port)
  EXPECT_TRUE(hold_queue_chains(s).empty());
  s.tproxy_port = 0;
  s.switch_hold = false;
  // Forwarded QUIC meets the routing rules' ports: on a forwarding host a moved flow's
  // packets are marked native at prerouting; elsewhere no chain costs received packets.
  EXPECT_FALSE(has(t, "routed_forward")) << t;
  s.forwarded_zone = true;
  const std::string fwd = chain(ruleset_text(s), "routed_forward");
  s.forwarded_zone = false;
  EXPECT_TRUE(has(fwd, "type filter hook prerouting priority mangle;")) << fwd;
  EXPECT_TRUE(has(fwd, "ip daddr . udp sport . udp dport @routed4 meta mark set meta mark & "
                       "0xffffff00 | 0x52\n")) << fwd;
  EXPECT_FALSE(has(fwd, "quic_route")) << fwd;
  // A moved flow, a lift datagram (marked native), the channel's endpoint and a native
  // prefix leave unmarked; the rest is marked for the channel, last.
  s.exempt_v4 = {"203.0.113.7"};
  s.native_v6 = {"fd00::/8"};
  const std::string q = chain(ruleset_text(s), "quic_route");
  const std::vector<std::string> order = {
      "ip daddr . udp sport . udp dport @routed4 return",
      "ip6 daddr . udp sport . udp dport @routed6 return",
      "meta mark & 0xff == 0x52 return",
      "ip daddr { 203.0.113.7 } return",
      "ip6 daddr { fd00::/8 } return",
      "meta mark set meta mark & 0xffffff00 | 0x51"};
  std::size_t at = 0;
  for (const auto& rule : order) {
    const auto found = q.find(rule, at);
    ASSERT_NE(found, std::string::npos) << rule << " after " << at << " in\n" << q;
    at = found;
  }
  EXPECT_TRUE(q.ends_with("| 0x51")) << q;
  const std::string out = chain(t, "channel_egress");
  // Copied before the source rewrite: the daemon sees the flow's local address.
  const auto log = out.find("meta l4proto udp th dport { 443, 8443 } log group 7\n");
  ASSERT_NE(log, std::string::npos) << out;
  EXPECT_LT(log, out.find("saddr set 10.77.0.2"));
  // In: rewritten, then the server's long headers copied.
  const std::string in = chain(t, "channel_ingress");
  EXPECT_TRUE(has(in, "saddr map @rev4 goto channel_seen")) << in;
  EXPECT_FALSE(has(in, " accept\n")) << in;
  EXPECT_TRUE(has(chain(t, "channel_seen"),
                  "meta l4proto udp th sport { 443, 8443 } @th,64,1 1 log group 7"));
  EXPECT_TRUE(inbound_queue_chains(s).empty());
  // The queue path keeps its accept and has no log.
  s.routed = false;
  EXPECT_FALSE(has(ruleset_text(s), "log group"));
}

TEST(NftRulesRouted, RoutingSendsDnsTcpAndQuicToTheChannelTableAndFailsClosed) {
  RoutingSpec r;
  r.routed = true;
  r.routed_table = 51821;
  r.quic_ports = {443};
  r.channel_interface = "qsw-client";
  r.source_v4 = "198.18.1.2";
  r.exempt_v4 = {"198.18.3.2"};
  r.native_v4 = {"192.168.0.0/16"};
  const auto cmds = routed_routing_commands(r);
  // The IPv4 commands, each as one line.
  auto v4_lines = [](const std::vector<std::vector<std::string>>& all) {
    std::vector<std::string> v4;
    for (const auto& c : all) {
      std::string line;
      for (const auto& w : c) line += (line.empty() ? "" : " ") + w;
      if (c[1] == "-4") v4.push_back(line);
    }
    return v4;
  };
  const std::vector<std::string> v4 = v4_lines(cmds);
  const std::vector<std::string> want = {
      "ip -4 route replace default dev qsw-client src 198.18.1.2 table 51821",
      "ip -4 rule add fwmark 0x52/0xff lookup main priority 10120",
      "ip -4 rule add to 198.18.3.2 lookup main priority 10121",
      "ip -4 rule add ipproto udp dport 53 lookup 51821 priority 10122",
      "ip -4 rule add ipproto udp dport 53 unreachable priority 10123",
      "ip -4 rule add ipproto tcp dport 53 lookup 51821 priority 10124",
      "ip -4 rule add ipproto tcp dport 53 unreachable priority 10125",
      "ip -4 rule add to 192.168.0.0/16 lookup main priority 10126",
      "ip -4 rule add ipproto tcp lookup 51821 priority 10127",
      "ip -4 rule add ipproto tcp unreachable priority 10128",
      "ip -4 rule add ipproto udp dport 443 lookup 51821 priority 10129",
      "ip -4 rule add ipproto udp dport 443 unreachable priority 10130",
  };
  EXPECT_EQ(v4, want);
  // A device channel: the host's own QUIC is routed by main, but for what the route chain
  // marks for the channel; forwarded QUIC keeps the port rules, last.
  RoutingSpec marked = r;
  marked.quic_channel_mark = 0x51;
  const std::vector<std::string> v4_marked = v4_lines(routed_routing_commands(marked));
  const std::vector<std::string> want_marked = {
      "ip -4 route replace default dev qsw-client src 198.18.1.2 table 51821",
      "ip -4 rule add fwmark 0x52/0xff lookup main priority 10120",
      "ip -4 rule add fwmark 0x51/0xff lookup 51821 priority 10121",
      "ip -4 rule add fwmark 0x51/0xff unreachable priority 10122",
      "ip -4 rule add iif lo ipproto udp dport 443 lookup main priority 10123",
      "ip -4 rule add to 198.18.3.2 lookup main priority 10124",
      "ip -4 rule add ipproto udp dport 53 lookup 51821 priority 10125",
      "ip -4 rule add ipproto udp dport 53 unreachable priority 10126",
      "ip -4 rule add ipproto tcp dport 53 lookup 51821 priority 10127",
      "ip -4 rule add ipproto tcp dport 53 unreachable priority 10128",
      "ip -4 rule add to 192.168.0.0/16 lookup main priority 10129",
      "ip -4 rule add ipproto tcp lookup 51821 priority 10130",
      "ip -4 rule add ipproto tcp unreachable priority 10131",
      // What a forwarding host forwards.
      "ip -4 rule add ipproto udp dport 443 lookup 51821 priority 10132",
      "ip -4 rule add ipproto udp dport 443 unreachable priority 10133",
  };
  EXPECT_EQ(v4_marked, want_marked);
  EXPECT_EQ(marked.flow_priority() + RoutingSpec::kRoutedPriorities - 1, 10133u);
  // A reload that changes a mark the installed rules select by needs a restart.
  EXPECT_FALSE(routing_marks_differ(marked, marked));
  EXPECT_TRUE(routing_marks_differ(r, marked));
  RoutingSpec other = marked;
  other.mark_mask = 0xff00;
  EXPECT_TRUE(routing_marks_differ(marked, other));
  // IPv6 without a native source: no channel route, so its channel packets meet unreachable.
  for (const auto& c : cmds) {
    if (c[1] == "-6") {
      EXPECT_NE(c[2], "route");
    }
  }
  // Every priority lies in the range remove_routing() clears.
  EXPECT_LE(r.flow_priority() + RoutingSpec::kRoutedPriorities - 1, 10133u);
}

// A LAN host's packets are forwarded: out_decide never sees them. The queue path marks its
// DNS, TCP and QUIC for the channel at prerouting (its Initial left natively without this).
TEST(NftRules, ForwardedPacketsTakeTheChannelOnTheQueuePath) {
  RulesetSpec s;
  s.channel_interface = "qsw-client";
  s.quic_ports = {443, 8443};
  s.exempt_v4 = {"203.0.113.7"};
  s.native_v6 = {"fd00::/8"};
  const std::string t = ruleset_text(s);
  const std::string sel = chain(t, "forwarded");
  EXPECT_TRUE(has(sel, "type filter hook prerouting priority mangle;")) << sel;
  for (const char* rule : {"ip frag-off & 0x3fff != 0 goto forwarded_channel",
                           "udp dport { 443, 8443 } goto forwarded_channel",
                           "meta l4proto { tcp, udp } th dport 53 goto forwarded_channel",
                           "meta l4proto tcp goto forwarded_channel"}) {
    EXPECT_TRUE(has(sel, rule)) << rule << "\n" << sel;
  }
  const std::string ch = chain(t, "forwarded_channel");
  const std::string mark = "meta mark set meta mark & 0xffffff00 | 0x51";
  // Not forwarded (to this host, from lo or the channel), the channel's endpoint, a native
  // prefix but for DNS: unmarked; everything else marked, last.
  const auto local = ch.find("fib daddr type local return");
  const auto exempt = ch.find("ip daddr { 203.0.113.7 } return");
  const auto dns = ch.find("ip6 daddr { fd00::/8 } udp dport 53 " + mark + " return");
  const auto prefix = ch.find("ip6 daddr { fd00::/8 } return");
  const auto last = ch.rfind(mark);
  ASSERT_NE(local, std::string::npos) << ch;
  ASSERT_NE(exempt, std::string::npos) << ch;
  ASSERT_NE(dns, std::string::npos) << ch;
  ASSERT_NE(prefix, std::string::npos) << ch;
  EXPECT_TRUE(has(ch, "iifname \"qsw-client\" return")) << ch;
  EXPECT_TRUE(local < exempt && exempt < dns && dns < prefix && prefix < last) << ch;
  // TCP off in the policy: forwarded TCP is not selected.
  s.tcp_to_channel = false;
  EXPECT_FALSE(has(chain(ruleset_text(s), "forwarded"), "meta l4proto tcp goto"));
}

// A forwarding host on the routed path: the channel's packets in conntrack zone ct_zone,
// chosen as the routing rules choose them, so that a moved flow's packets start an entry in
// zone 0 that the host's masquerade meets. Flows in routed4/6 stay in zone 0.
TEST(NftRulesRouted, AForwardingHostKeepsTheChannelInAZoneOfItsOwn) {
  RulesetSpec s;
  s.channel_interface = "qsw-client";
  s.stateless = true;
  s.routed = true;
  s.tunnel_v4 = "10.77.0.2";
  s.exempt_v4 = {"203.0.113.7"};
  s.native_v4 = {"192.168.0.0/16"};
  s.ct_zone = 7;
  EXPECT_FALSE(has(ruleset_text(s), "ct zone"));  // not a forwarding host: no conntrack
  s.forwarded_zone = true;
  ASSERT_EQ(failure_text(check_spec(s)), "");
  const std::string t = ruleset_text(s);
  const std::string out = chain(t, "zone_out");
  EXPECT_TRUE(has(out, "type filter hook output priority raw;")) << out;
  EXPECT_LT(out.find("@routed4 return"), out.find("oifname \"qsw-client\" ct zone set 7")) << out;
  // QUIC by routed_out's mark, set before this chain (its re-route comes after the hook).
  EXPECT_TRUE(has(out, "meta mark & 0xff == 0x51 ct zone set 7")) << out;
  EXPECT_LT(kRoutedOutPriority, -300);
  const std::string fwd = chain(t, "zone_forward");
  EXPECT_TRUE(has(fwd, "type filter hook prerouting priority raw;")) << fwd;
  const std::vector<std::string> order = {
      "iifname \"qsw-client\" ct zone set 7 return",      // the channel's answers
      "fib daddr type local return",                      // not forwarded
      "ip daddr . udp sport . udp dport @routed4 return",  // moved native
      "ip daddr { 203.0.113.7 } return",                  // the channel's endpoint
      "meta l4proto { tcp, udp } th dport 53 ct zone set 7 return",
      "ip daddr { 192.168.0.0/16 } return",               // a native prefix, but for DNS
      "meta l4proto tcp ct zone set 7 return",
      "udp dport 443 ct zone set 7"};
  std::size_t at = 0;
  for (const auto& rule : order) {
    const auto next = fwd.find(rule, at);
    ASSERT_NE(next, std::string::npos) << rule << "\n" << fwd;
    at = next + rule.size();
  }
}

// A tproxy channel on a forwarding host: a LAN host's channel packets get the zone and
// mark_channel (routed to the proxy's socket), are handed to the proxy at prerouting and
// copied with the outbound prefix; the proxy's answers to them take the main table, in the
// zone, copied with the inbound prefix. Without forwarding none of it.
TEST(NftRulesRouted, ATproxyChannelTakesALanHostsPacketsWhenForwarding) {
  RulesetSpec s;
  s.channel_interface = "lo";
  s.nat = false;
  s.routed = true;
  s.tproxy_port = 1081;
  s.log_group = 7;
  s.ct_zone = 7;
  ASSERT_EQ(failure_text(check_spec(s)), "");
  EXPECT_FALSE(has(ruleset_text(s), "ct zone"));
  EXPECT_FALSE(has(ruleset_text(s), "to_proxy_lan"));
  s.forwarded_zone = true;
  const std::string t = ruleset_text(s);
  const std::string channel = " ct zone set 7 meta mark set meta mark & 0xffffff00 | 0x51";
  const std::string fwd = chain(t, "zone_forward");
  EXPECT_TRUE(has(fwd, "meta iif lo return")) << fwd;  // the host's own, looped back
  EXPECT_TRUE(has(fwd, "meta l4proto tcp" + channel + " return")) << fwd;
  EXPECT_TRUE(has(fwd, "udp dport 443" + channel)) << fwd;
  EXPECT_TRUE(has(chain(t, "zone_out"),
                  "fib saddr type != local fib daddr type != local ct zone set 7"));
  const std::string pre = chain(t, "routed_forward");
  EXPECT_LT(pre.find("@routed4"), pre.find("meta mark & 0xff == 0x51 goto to_proxy_lan")) << pre;
  const std::string to = chain(t, "to_proxy_lan");
  EXPECT_TRUE(has(to, "log prefix \"qs-out\" group 7")) << to;
  EXPECT_TRUE(has(to, "goto to_proxy")) << to;
  const std::string out = chain(t, "routed_out");
  EXPECT_LT(out.find("goto from_proxy_lan"), out.find("goto to_proxy_out")) << out;
  const std::string from = chain(t, "from_proxy_lan");
  EXPECT_TRUE(has(from, "log prefix \"qs-in\" group 7")) << from;
  EXPECT_TRUE(has(from, "meta mark set meta mark & 0xffffff00 | 0x52")) << from;
}

}  // namespace
}  // namespace quicstep::client::kernel
