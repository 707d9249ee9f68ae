// The tproxy channel (channel_kind "tproxy", nft_rules.hpp "A tproxy channel"): its ruleset
// and routes as text, and against the kernel in a private network namespace of a child
// process (root only; skipped otherwise): the routed ruleset and routing installed as the
// daemon installs them, a native device (a veth without ARP or IPv6, whose transmit counter
// tells whether a datagram left natively) and a stand-in for the proxy client: a UDP and a
// TCP socket with IP_TRANSPARENT at 127.0.0.1:1080. Channel packets (QUIC, DNS, a TCP
// connection) reach the proxy's sockets with their original destination; a flow in routed4
// leaves natively and its answers arrive through loose reverse-path filtering; with the proxy gone they are dropped and counted, never native; local
// traffic on lo is not touched; the daemon's health reading sees bytes out and in.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/daemon/device_counters.hpp"
#include "client/kernel/kernel_rules.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/nft_set_writer.hpp"
#include "client/kernel/routing.hpp"
#include "common/flow_key.hpp"
#include "net/process.hpp"
#include "unit/client/private_netns.hpp"

namespace quicstep::client::kernel {
namespace {

std::string run(const std::vector<std::string>& cmd, const std::string& input = {}) {
  auto r = net::run_process(cmd, input);
  return r.ok() ? "" : net::describe(cmd, r);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The text of chain `name` in `t` (up to its closing brace).
std::string chain(const std::string& t, const std::string& name) {
  const auto start = t.find("chain " + name + " {");
  if (start == std::string::npos) return "";
  return t.substr(start, t.find("\n  }\n", start) - start);
}

RulesetSpec tproxy_spec() {
  RulesetSpec s;
  s.routed = true;
  s.nat = s.stateless = false;
  s.channel_interface = "lo";
  s.tproxy_port = 1080;
  s.quic_ports = {443};
  s.log_group = 7;
  return s;
}

RoutingSpec tproxy_routing(const std::string& source) {
  RoutingSpec r;
  r.routed = true;
  r.channel_local = true;
  r.channel_interface = "lo";
  r.source_v4 = source;
  return r;
}

std::string joined(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& w : words) line += (line.empty() ? "" : " ") + w;
  return line;
}

TEST(TproxyChannel, TheRulesetHandsChannelPacketsToTheProxyOrDropsThem) {
  const RulesetSpec s = tproxy_spec();
  ASSERT_TRUE(check_spec(s));
  const std::string t = ruleset_text(s);
  EXPECT_FALSE(has(t, "\ntable netdev quicstep {")) << "no device of its own to bind to";
  EXPECT_TRUE(has(chain(t, "routed_out"), "@routed4 meta mark set meta mark & 0xffffff00 | 0x52 "
                                          "return\n"));
  EXPECT_TRUE(has(chain(t, "routed_out"), "meta oif lo fib daddr type != local goto "
                                          "to_proxy_out"));
  const std::string pre = chain(t, "routed_forward");
  EXPECT_TRUE(has(pre, "meta iif lo fib daddr type != local goto to_proxy")) << pre;
  EXPECT_TRUE(has(pre, "meta iif lo fib saddr type != local goto from_proxy")) << pre;
  const std::string to = chain(t, "to_proxy");
  for (const char* rule : {"meta l4proto udp tproxy ip to 127.0.0.1:1080 accept",
                           "meta l4proto udp tproxy ip6 to [::1]:1080 accept",
                           "meta l4proto tcp tproxy ip to 127.0.0.1:1080 accept",
                           "meta l4proto tcp tproxy ip6 to [::1]:1080 accept"}) {
    EXPECT_TRUE(has(to, rule)) << rule << " in " << to;
  }
  // The last rule: no socket, no way out.
  EXPECT_TRUE(to.ends_with("\n    counter name \"channel_refused\" drop")) << to;
  EXPECT_TRUE(has(chain(t, "to_proxy_out"), "meta l4proto udp th dport 443 log group 7"));
  EXPECT_TRUE(has(chain(t, "from_proxy"), "udp th sport 443 @th,64,1 1 log group 7"));
  // Refused where it cannot work.
  RulesetSpec queue = s;
  queue.routed = false;
  EXPECT_FALSE(check_spec(queue));
  RulesetSpec device = s;
  device.channel_interface = "qs-wg0";
  EXPECT_FALSE(check_spec(device));
  // A device channel's routed table has none of the proxy's rules, and marks the other way
  // round (the flows not moved, for the channel: nft_rules_test.cpp).
  RulesetSpec wg = s;
  wg.tproxy_port = 0;
  wg.channel_interface = "qs-wg0";
  EXPECT_FALSE(has(ruleset_text(wg), "tproxy"));
  EXPECT_TRUE(has(ruleset_text(wg), "goto quic_route"));
}

TEST(TproxyChannel, TheChannelRouteGoesThroughLoWithTheNativeSource) {
  RoutingSpec r = tproxy_routing("198.18.1.2");
  r.source_v6 = "2001:db8:1::2";
  std::vector<std::string> routes;
  for (const auto& c : routed_routing_commands(r)) {
    if (c[2] == "route") routes.push_back(joined(c));
  }
  // IPv4's is unicast: a local one would fail the reverse-path check of native answers.
  EXPECT_EQ(routes, (std::vector<std::string>{
                        "ip -4 route replace default dev lo src 198.18.1.2 table 51821",
                        "ip -6 route replace local default dev lo src 2001:db8:1::2 table 51821"}));
  EXPECT_EQ(joined(routed_channel_route(r, "-6", "")),
            "ip -6 route del local default dev lo table 51821");
  r.channel_local = false;
  r.channel_interface = "qs-wg0";
  EXPECT_EQ(joined(routed_channel_route(r, "-4", "198.18.1.3")),
            "ip -4 route replace default dev qs-wg0 src 198.18.1.3 table 51821");
}

// A forwarding host's LAN packets for the proxy carry forwarded_mark: a rule ahead of the
// routed ones sends them to the channel table, whose local routes deliver them to the
// proxy's socket (routed on, a packet tproxy gave a socket is dropped).
TEST(TproxyChannel, ALanHostsChannelPacketsAreDeliveredLocally) {
  RoutingSpec r = tproxy_routing("198.18.1.2");
  r.forwarded_mark = 0x51;
  std::vector<std::string> lines;
  for (const auto& c : routed_routing_commands(r)) {
    if (c[1] == "-4") lines.push_back(joined(c));
  }
  const auto at = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) - lines.begin();
  };
  const auto route = at("ip -4 route replace local default dev lo table 51820");
  const auto rule = at("ip -4 rule add fwmark 0x51/0xff lookup 51820 priority 10100");
  ASSERT_LT(route, std::ssize(lines));
  ASSERT_LT(rule, std::ssize(lines));
  EXPECT_LT(route, rule);  // the route before the rule that leads to it
  EXPECT_LT(r.priority, r.flow_priority());  // ahead of every routed rule
  bool at_priority = false;
  for (const auto& [p, n] : routing_rule_priorities(r, "-4")) at_priority |= p == r.priority;
  EXPECT_TRUE(at_priority) << "the healing check must expect the rule";
  r.forwarded_mark = 0;
  for (const auto& c : routed_routing_commands(r)) EXPECT_NE(c.back(), "10100") << joined(c);
}

// A stand-in for the proxy client's sockets: IP_TRANSPARENT, bound to 127.0.0.1:port.
int transparent_socket(int type, std::uint16_t port) {
  const int fd = socket(AF_INET, type | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof one);
  setsockopt(fd, SOL_IP, IP_RECVORIGDSTADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      (type == SOCK_STREAM && listen(fd, 4) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

sockaddr_in endpoint(const char* address, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, address, &a.sin_addr);
  return a;
}

std::string text(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

// One datagram from local port `sport` to `to`, connected or not. "" or the failing call.
std::string send_udp(std::uint16_t sport, const sockaddr_in& to, bool connected) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return "socket";
  const sockaddr_in local = endpoint("0.0.0.0", sport);
  const char payload[64] = {0x40};  // a short header's first octet
  std::string why;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    why = std::string("bind: ") + std::strerror(errno);
  } else if (connected) {
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 ||
        send(fd, payload, sizeof payload, 0) != static_cast<ssize_t>(sizeof payload)) {
      why = std::string("connected send: ") + std::strerror(errno);
    }
  } else if (sendto(fd, payload, sizeof payload, 0, reinterpret_cast<const sockaddr*>(&to),
                    sizeof to) != static_cast<ssize_t>(sizeof payload)) {
    why = std::string("sendto: ") + std::strerror(errno);
  }
  close(fd);
  return why;
}

// What the transparent UDP socket received within 200 ms: "from -> original destination",
// or "nothing".
std::string proxy_received(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 200) <= 0) return "nothing";
  char data[2048];
  char control[256];
  sockaddr_in from{};
  iovec iov{data, sizeof data};
  msghdr m{};
  m.msg_name = &from;
  m.msg_namelen = sizeof from;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  if (recvmsg(fd, &m, 0) < 0) return std::string("recvmsg: ") + std::strerror(errno);
  std::string dst = "?";
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_ORIGDSTADDR) {
      sockaddr_in orig{};
      std::memcpy(&orig, CMSG_DATA(c), sizeof orig);
      dst = text(orig);
    }
  }
  return text(from) + " -> " + dst;
}

// A device's MAC address, over netlink (this namespace's; /sys shows the mount's).
std::vector<std::uint8_t> mac_of(const std::string& dev) {
  auto r = net::run_process({"ip", "-j", "link", "show", "dev", dev});
  auto j = nlohmann::json::parse(r.ok() ? r.output : "", nullptr, false);
  std::vector<std::uint8_t> mac;
  if (!j.is_array() || j.empty() || !j[0].contains("address")) return mac;
  const std::string text = j[0]["address"].get<std::string>();  // "aa:bb:cc:dd:ee:ff"
  for (std::size_t i = 0; i + 1 < text.size() && mac.size() < 6; i += 3) {
    mac.push_back(static_cast<std::uint8_t>(std::stoul(text.substr(i, 2), nullptr, 16)));
  }
  return mac;
}

// A server's answer arriving natively: a frame from 198.18.71.10:443 to 198.18.70.2:`dport`
// sent into qsn1, so that it arrives on qsn0 as from the network (ingress: the reverse-path
// check applies). Returns whether a socket bound to 198.18.70.2:dport received it.
std::string native_answer(std::uint16_t dport) {
  const int app = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  const sockaddr_in local = endpoint("198.18.70.2", dport);
  if (bind(app, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) return "bind";
  std::vector<std::uint8_t> frame = mac_of("qsn0");
  const std::vector<std::uint8_t> src = mac_of("qsn1");
  if (frame.size() != 6 || src.size() != 6) return "no MAC";
  frame.insert(frame.end(), src.begin(), src.end());
  frame.insert(frame.end(), {0x08, 0x00});
  const std::uint16_t payload = 16, udp_len = 8 + payload, total = 20 + udp_len;
  std::uint8_t ip[20] = {0x45, 0, static_cast<std::uint8_t>(total >> 8),
                         static_cast<std::uint8_t>(total), 0, 0, 0x40, 0, 64, 17, 0, 0,
                         198, 18, 71, 10, 198, 18, 70, 2};
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (ip[i] << 8) | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<std::uint8_t>(~sum >> 8);
  ip[11] = static_cast<std::uint8_t>(~sum);
  frame.insert(frame.end(), ip, ip + 20);
  // UDP checksum 0: none (allowed over IPv4).
  frame.insert(frame.end(), {0x01, 0xbb, static_cast<std::uint8_t>(dport >> 8),
                             static_cast<std::uint8_t>(dport), 0, udp_len, 0, 0});
  frame.insert(frame.end(), payload, 0x40);
  const int raw = socket(AF_PACKET, SOCK_RAW, 0);
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(if_nametoindex("qsn1"));
  to.sll_halen = 6;
  std::memcpy(to.sll_addr, frame.data(), 6);
  const bool sent = sendto(raw, frame.data(), frame.size(), 0,
                           reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
                    static_cast<ssize_t>(frame.size());
  close(raw);
  pollfd p{app, POLLIN, 0};
  const bool got = sent && poll(&p, 1, 500) == 1;
  close(app);
  return !sent ? "AF_PACKET send failed" : got ? "received" : "lost";
}

common::FlowKey flow(std::uint16_t sport) {
  common::FlowKey k;
  k.client.family = k.server.family = common::IpFamily::v4;
  inet_pton(AF_INET, "198.18.70.2", k.client.bytes.data());
  inet_pton(AF_INET, "198.18.71.10", k.server.bytes.data());
  k.client_port = sport;
  k.server_port = 443;
  k.protocol = 17;
  return k;
}

TEST(TproxyChannel, ChannelPacketsReachTheProxySocketOrNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              for (const auto& cmd : std::vector<std::vector<std::string>>{
                       {"ip", "link", "set", "lo", "up"},
                       {"ip", "link", "add", "qsn0", "type", "veth", "peer", "name", "qsn1"},
                       {"sysctl", "-qw", "net.ipv6.conf.qsn0.disable_ipv6=1"},
                       {"sysctl", "-qw", "net.ipv4.conf.all.rp_filter=2"},
                       {"sysctl", "-qw", "net.ipv4.conf.qsn0.rp_filter=2"},
                       {"ip", "link", "set", "qsn0", "arp", "off"},
                       {"ip", "link", "set", "qsn1", "up"},
                       {"ip", "addr", "add", "198.18.70.2/24", "dev", "qsn0"},
                       {"ip", "link", "set", "qsn0", "up"},
                       {"ip", "route", "add", "default", "via", "198.18.70.1", "dev", "qsn0"}}) {
                if (auto e = run(cmd); !e.empty()) return e;
              }
              for (const auto& cmd : routed_routing_commands(tproxy_routing("198.18.70.2"))) {
                if (auto e = run(cmd); !e.empty()) return e;
              }
              const RulesetSpec spec = tproxy_spec();
              if (auto e = run({"nft", "-f", "-"}, ruleset_text(spec)); !e.empty()) return e;
              int udp = transparent_socket(SOCK_DGRAM, 1080);
              const int tcp = transparent_socket(SOCK_STREAM, 1080);
              if (udp < 0 || tcp < 0) return std::string("proxy sockets: ") + std::strerror(errno);
              const sockaddr_in server = endpoint("198.18.71.10", 443);
              // Where one datagram went: the proxy (with its addresses), "native", or both.
              auto where = [&](std::uint16_t sport, const sockaddr_in& to,
                               bool connected) -> std::string {
                const long n0 = tx_packets("qsn0");
                if (auto e = send_udp(sport, to, connected); !e.empty()) return e;
                const std::string got = udp >= 0 ? proxy_received(udp) : "nothing";
                const long n1 = tx_packets("qsn0");
                if (n1 == n0) return got;
                return n1 - n0 == 1 && got == "nothing" ? "native" : got + " and native";
              };
              for (bool connected : {false, true}) {
                const std::string mode = connected ? "connected: " : "unconnected: ";
                if (auto got = where(40000, server, connected);
                    got != "198.18.70.2:40000 -> 198.18.71.10:443") {
                  return mode + "a QUIC datagram on the channel: " + got;
                }
                if (auto got = where(40002, endpoint("198.18.72.53", 53), connected);
                    got != "198.18.70.2:40002 -> 198.18.72.53:53") {
                  return mode + "a DNS query: " + got;
                }
              }
              // A TCP connection: accepted by the proxy, its local end the server's address.
              const int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
              connect(c, reinterpret_cast<const sockaddr*>(&server), sizeof server);
              pollfd p{tcp, POLLIN, 0};
              if (poll(&p, 1, 1000) <= 0) return "the proxy's TCP socket accepted nothing";
              const int accepted = accept(tcp, nullptr, nullptr);
              sockaddr_in orig{};
              socklen_t len = sizeof orig;
              getsockname(accepted, reinterpret_cast<sockaddr*>(&orig), &len);
              if (text(orig) != "198.18.71.10:443") return "TCP reached " + text(orig);
              close(accepted);
              close(c);
              // Moved native by its element.
              NftSetWriter writer;
              if (auto opened = writer.open(); !opened) return opened.error().message;
              const SetElementOp add{true, FlowSet::routed, flow(40000), {}};
              if (auto done = writer.apply(spec.table, std::span(&add, 1)); !done) {
                return "add: " + done.error().first;
              }
              for (bool connected : {false, true}) {
                if (auto got = where(40000, server, connected); got != "native") {
                  return std::string("the element's flow: ") + got;
                }
                if (auto got = where(40001, server, connected);
                    got != "198.18.70.2:40001 -> 198.18.71.10:443") {
                  return std::string("another port's flow: ") + got;
                }
              }
              // Its answers arrive natively, through loose reverse-path filtering (systemd's
              // default), which looks the source up with the flow's ports: the channel route
              // must not make it local.
              if (auto got = native_answer(40000); got != "received") {
                return "a native answer with rp_filter=2: " + got;
              }
              // Local traffic on lo is not the channel's.
              const int local = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
              const sockaddr_in local_443 = endpoint("127.0.0.1", 443);
              bind(local, reinterpret_cast<const sockaddr*>(&local_443), sizeof local_443);
              if (auto e = send_udp(40003, local_443, false); !e.empty()) return e;
              pollfd lp{local, POLLIN, 0};
              if (poll(&lp, 1, 200) != 1) {
                return "a local datagram to 127.0.0.1:443 did not reach its socket";
              }
              close(local);
              // The health reading: bytes handed to the proxy (its answers: none here).
              const auto reading = daemon::read_proxy_counters(spec.table);
              if (!reading) return reading.error().message;
              if (reading->peers.at(0).tx_bytes == 0) return "channel_out counted nothing";
              // The proxy gone: dropped and counted, never native.
              close(udp);
              udp = -1;
              for (bool connected : {false, true}) {
                if (auto got = where(40004, server, connected); got != "nothing") {
                  return std::string("with the proxy gone: ") + got;
                }
              }
              const auto counters = read_kernel_counters(spec.table);
              const auto refused = counters.find("channel_refused");
              if (refused == counters.end() || refused->second.packets != 2) {
                return "channel_refused should count the 2 datagrams";
              }
              close(tcp);
              return "";
            }),
            "");
}

}  // namespace
}  // namespace quicstep::client::kernel
