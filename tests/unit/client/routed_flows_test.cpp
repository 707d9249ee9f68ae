// The routed native path's flows against the kernel, in a private network namespace of a
// child process (root only; skipped otherwise): the routed ruleset (nft_rules.hpp) and the
// routing's rules (routing.hpp) installed as the daemon installs them, with a channel device
// and a native one (veths without ARP or IPv6, whose transmit counters tell where a
// datagram left). A QUIC
// datagram takes the channel (the route chain marks it for the one fwmark rule); once its
// flow is an element of routed4/6 (NftSetWriter, as RoutedPath adds it) it leaves natively,
// unmarked, from connected and unconnected sockets alike; deleted, it takes the channel
// again; another flow to the same server never left the channel. A replaced table starts
// empty; without the table QUIC takes the main table (the guard's to judge). A datagram too
// long for the channel is refused without leaving the channel's MTU on the native route. The
// hold at the switch: a switching flow's short headers wait in the queue and leave where
// the verdict sends them, in order; its long headers never wait; with no listener they leave
// natively; a listener that dies holding them (kill -9) lets none of them leave.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/kernel/nft_netlink.hpp"
#include "client/kernel/nft_queue_rules.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/nft_set_writer.hpp"
#include "client/kernel/routing.hpp"
#include "common/flow_key.hpp"
#include "net/clock.hpp"
#include "net/nfqueue_frontend.hpp"
#include "net/process.hpp"
#include "unit/client/private_netns.hpp"

namespace quicstep::client::kernel {
namespace {

std::string run(const std::vector<std::string>& cmd, const std::string& input = {}) {
  auto r = net::run_process(cmd, input);
  return r.ok() ? "" : net::describe(cmd, r);
}

// One datagram from local port `sport` to server:443, by an unconnected socket (sendto) or a
// connected one (connect, send), with SO_MARK `mark` unless 0. Returns "" or the failing call.
std::string send_from(std::uint16_t sport, const char* server, bool connected,
                      std::uint32_t mark, std::uint8_t first_octet = 0x40) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return "socket";
  if (mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof mark) != 0) {
    close(fd);
    return std::string("SO_MARK: ") + std::strerror(errno);
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_port = htons(sport);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(443);
  inet_pton(AF_INET, server, &to.sin_addr);
  std::string why;
  char payload[64] = {0x40};  // a short header's first octet
  payload[0] = static_cast<char>(first_octet);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    why = std::string("bind: ") + std::strerror(errno);
  } else if (connected) {
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 ||
        send(fd, payload, sizeof payload, 0) != static_cast<ssize_t>(sizeof payload)) {
      why = std::string("connected send: ") + std::strerror(errno);
    }
  } else if (sendto(fd, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to),
                    sizeof to) != static_cast<ssize_t>(sizeof payload)) {
    why = std::string("sendto: ") + std::strerror(errno);
  }
  close(fd);
  return why;
}

common::IpAddress address(const char* text) {
  common::IpAddress a;
  if (inet_pton(AF_INET, text, a.bytes.data()) == 1) {
    a.family = common::IpFamily::v4;
  } else {
    a.family = common::IpFamily::v6;
    inet_pton(AF_INET6, text, a.bytes.data());
  }
  return a;
}

common::FlowKey flow(const char* client, std::uint16_t sport, const char* server) {
  common::FlowKey k;
  k.client = address(client);
  k.server = address(server);
  k.client_port = sport;
  k.server_port = 443;
  k.protocol = 17;
  return k;
}

// The routed ruleset of a device channel `qsc0` (tunnel 10.70.0.2, fd70::2 with `v6`), the
// native addresses 198.18.70.2 and 2001:db8:70::2 (with `v6`).
RulesetSpec routed_spec(bool v6) {
  RulesetSpec spec;
  spec.routed = true;
  spec.stateless = true;
  spec.channel_interface = "qsc0";
  spec.tunnel_v4 = "10.70.0.2";
  if (v6) spec.tunnel_v6 = "fd70::2";
  return spec;
}

// Installs the routing rules and the ruleset as the daemon does; "" or what failed.
std::string install_routed(const RulesetSpec& spec) {
  RoutingSpec routing;
  routing.routed = true;
  routing.channel_interface = spec.channel_interface;
  routing.source_v4 = "198.18.70.2";
  if (!spec.tunnel_v6.empty()) routing.source_v6 = "2001:db8:70::2";
  routing.quic_channel_mark = spec.mark_channel;
  for (const auto& cmd : routed_routing_commands(routing)) {
    if (auto e = run(cmd); !e.empty()) return e;
  }
  return run({"nft", "-f", "-"}, ruleset_text(spec));
}

// A native device qsn0 (198.18.70.2, the default route) and a channel device qsc0
// (10.70.0.2), veths whose transmit counters count only the test's datagrams (no ARP, no
// IPv6's own packets). "" or what failed.
std::string counted_devices() {
  for (const auto& cmd : std::vector<std::vector<std::string>>{
           {"ip", "link", "set", "lo", "up"},
           {"ip", "link", "add", "qsn0", "type", "veth", "peer", "name", "qsn1"},
           {"ip", "link", "add", "qsc0", "type", "veth", "peer", "name", "qsc1"},
           {"sysctl", "-qw", "net.ipv6.conf.qsn0.disable_ipv6=1"},
           {"sysctl", "-qw", "net.ipv6.conf.qsc0.disable_ipv6=1"},
           {"ip", "link", "set", "qsn0", "arp", "off"},
           {"ip", "link", "set", "qsc0", "arp", "off"},
           {"ip", "link", "set", "qsn1", "up"},
           {"ip", "link", "set", "qsc1", "up"},
           {"ip", "addr", "add", "198.18.70.2/24", "dev", "qsn0"},
           {"ip", "addr", "add", "10.70.0.2/32", "dev", "qsc0"},
           {"ip", "link", "set", "qsn0", "up"},
           {"ip", "link", "set", "qsc0", "up"},
           {"ip", "route", "add", "default", "via", "198.18.70.1", "dev", "qsn0"}}) {
    if (auto e = run(cmd); !e.empty()) return e;
  }
  return "";
}

TEST(RoutedFlows, TheFlowsNotInTheSetsAreMarkedForTheChannel) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto e = counted_devices(); !e.empty()) return e;
              const RulesetSpec spec = routed_spec(false);
              if (auto e = install_routed(spec); !e.empty()) return e;
              NftSetWriter writer;
              if (auto opened = writer.open(); !opened) return opened.error().message;
              const char* server = "198.18.71.10";
              // Where one datagram of each kind leaves: "native", "channel" or what failed.
              auto where = [&](std::uint16_t sport, bool connected,
                               std::uint32_t mark) -> std::string {
                const long n0 = tx_packets("qsn0"), c0 = tx_packets("qsc0");
                if (auto e = send_from(sport, server, connected, mark); !e.empty()) return e;
                const long n1 = tx_packets("qsn0"), c1 = tx_packets("qsc0");
                if (n1 - n0 == 1 && c1 == c0) return "native";
                if (c1 - c0 == 1 && n1 == n0) return "channel";
                return "native +" + std::to_string(n1 - n0) + ", channel +" +
                       std::to_string(c1 - c0);
              };
              auto expect = [&](std::uint16_t sport, const std::string& want, const char* when,
                                std::uint32_t mark = 0) -> std::string {
                for (bool connected : {false, true}) {
                  const std::string got = where(sport, connected, mark);
                  if (got != want) {
                    return std::string(when) + (connected ? ", connected" : ", unconnected") +
                           ": " + got + ", want " + want;
                  }
                }
                return "";
              };
              if (auto e = expect(40000, "channel", "before"); !e.empty()) return e;
              const SetElementOp add{true, FlowSet::routed, flow("198.18.70.2", 40000, server),
                                     {}};
              if (auto done = writer.apply(spec.table, std::span(&add, 1)); !done) {
                return "add: " + done.error().first;
              }
              if (auto e = expect(40000, "native", "element added"); !e.empty()) return e;
              if (auto e = expect(40001, "channel", "another port"); !e.empty()) return e;
              const SetElementOp del{false, FlowSet::routed, flow("198.18.70.2", 40000, server),
                                     {}};
              if (auto done = writer.apply(spec.table, std::span(&del, 1)); !done) {
                return "delete: " + done.error().first;
              }
              if (auto e = expect(40000, "channel", "element deleted"); !e.empty()) return e;
              // Added again, then the table replaced (a restart, a heal): empty again.
              if (auto done = writer.apply(spec.table, std::span(&add, 1)); !done) {
                return "add again: " + done.error().first;
              }
              if (auto e = run({"nft", "-f", "-"}, ruleset_text(spec)); !e.empty()) return e;
              if (auto e = expect(40000, "channel", "table replaced"); !e.empty()) return e;
              // A datagram marked native on purpose (the lift datagrams' socket) is not
              // marked for the channel.
              if (auto e = expect(40002, "native", "marked native", 0x52); !e.empty()) {
                return e;
              }
              // The table gone: QUIC's own route is main's (where the guard, not in this
              // test, drops every long header); the rules alone for a tproxy channel (by
              // port) still send it to the channel.
              if (auto e = run({"nft", "delete", "table", "inet", spec.table}); !e.empty()) {
                return e;
              }
              if (auto e = expect(40000, "native", "table deleted"); !e.empty()) return e;
              return "";
            }),
            "");
}

// A datagram of `size` octets of payload to server:443 from a connected socket that forbids
// fragmentation (as a path-MTU probe is sent): errno of the send, or 0 if it was sent.
int send_unfragmented(int family, const char* server, std::size_t size) {
  const int fd = socket(family, SOCK_DGRAM, 0);
  if (fd < 0) return errno;
  int pmtu = family == AF_INET ? IP_PMTUDISC_DO : IPV6_PMTUDISC_DO;
  sockaddr_storage to{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&to);
    a->sin_family = AF_INET;
    a->sin_port = htons(443);
    inet_pton(AF_INET, server, &a->sin_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&to);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(443);
    inet_pton(AF_INET6, server, &a->sin6_addr);
    len = sizeof *a;
  }
  std::vector<char> payload(size, 0x5a);
  payload[0] = 0x40;  // a short header (a probe is PING and PADDING)
  int err = 0;
  if ((family == AF_INET ? setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu)
                         : setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu)) !=
          0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), len) != 0 ||
      send(fd, payload.data(), payload.size(), 0) < 0) {
    err = errno;
  }
  close(fd);
  return err;
}

TEST(RoutedFlows, ADatagramTooLongForTheChannelLeavesTheNativeRouteAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              for (const auto& cmd : std::vector<std::vector<std::string>>{
                       {"ip", "link", "set", "lo", "up"},
                       {"ip", "link", "add", "qsn0", "type", "veth", "peer", "name", "qsn1"},
                       {"ip", "link", "add", "qsc0", "mtu", "1420", "type", "veth", "peer",
                        "name", "qsc1"},
                       {"ip", "link", "set", "qsn1", "up"},
                       {"ip", "link", "set", "qsc1", "up"},
                       {"ip", "addr", "add", "198.18.70.2/24", "dev", "qsn0"},
                       {"ip", "addr", "add", "2001:db8:70::2/64", "dev", "qsn0", "nodad"},
                       {"ip", "addr", "add", "10.70.0.2/32", "dev", "qsc0"},
                       {"ip", "addr", "add", "fd70::2/128", "dev", "qsc0", "nodad"},
                       {"ip", "link", "set", "qsn0", "up"},
                       {"ip", "link", "set", "qsc0", "up"},
                       {"ip", "route", "add", "default", "via", "198.18.70.1", "dev", "qsn0"},
                       {"ip", "-6", "route", "add", "default", "via", "2001:db8:70::1", "dev",
                        "qsn0"}}) {
                if (auto e = run(cmd); !e.empty()) return e;
              }
              if (auto e = install_routed(routed_spec(true)); !e.empty()) return e;
              for (const auto& [family, server] :
                   {std::pair{AF_INET, "198.18.71.10"}, {AF_INET6, "2001:db8:71::10"}}) {
                const std::string fam = family == AF_INET ? "IPv4" : "IPv6";
                // Fits the native route (MTU 1500), not the channel's (1420): the route
                // chain re-routes it into the channel, where it is refused.
                if (const int err = send_unfragmented(family, server, 1440); err != EMSGSIZE) {
                  return fam + ": the send gave `" + std::strerror(err) + "', want EMSGSIZE";
                }
                auto r = net::run_process({"ip", "-o", family == AF_INET ? "-4" : "-6", "route",
                                           "get", server});
                if (!r.ok()) return "ip route get " + std::string(server) + ": " + r.output;
                if (r.output.find(" mtu ") != std::string::npos) {
                  return fam + ": the native route took the channel's MTU: " + r.output;
                }
                // A datagram that fits the channel still takes it.
                if (const int err = send_unfragmented(family, server, 1300); err != 0) {
                  return fam + ": 1300 octets: " + std::strerror(err);
                }
              }
              return "";
            }),
            "");
}

TEST(RoutedFlows, ASwitchingFlowsShortHeadersWaitInTheQueueForTheSwitch) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns([]() -> std::string {
              if (auto e = counted_devices(); !e.empty()) return e;
              RulesetSpec spec = routed_spec(false);
              spec.switch_hold = true;
              if (auto e = install_routed(spec); !e.empty()) return e;
              NftNetlink netlink;
              if (auto q = append_queue_rules(netlink, spec.table, hold_queue_chains(spec),
                                              spec.queue_outbound);
                  !q) {
                return q.error().message;
              }
              NftSetWriter writer;
              if (auto opened = writer.open(); !opened) return opened.error().message;
              const char* server = "198.18.71.10";
              const SetElementOp add{true, FlowSet::switching,
                                     flow("198.18.70.2", 40010, server), std::chrono::seconds(30)};
              if (auto done = writer.apply(spec.table, std::span(&add, 1)); !done) {
                return "add: " + done.error().first;
              }
              long n = tx_packets("qsn0"), c = tx_packets("qsc0");
              // What left since the last look: "native +N, channel +M".
              auto left = [&]() {
                const long n1 = tx_packets("qsn0"), c1 = tx_packets("qsc0");
                const std::string out = "native +" + std::to_string(n1 - n) + ", channel +" +
                                        std::to_string(c1 - c);
                n = n1;
                c = c1;
                return out;
              };
              // No listener: bypass, natively (short headers only: the guard's judgement).
              if (auto e = send_from(40010, server, false, 0); !e.empty()) return e;
              if (auto got = left(); got != "native +1, channel +0") return "bypass: " + got;
              auto queue = std::make_unique<net::NfqueueFrontend>();
              net::NfqueueOptions o;
              o.queue = spec.queue_outbound;
              if (auto opened = queue->open(o); !opened) return opened.error().message;
              // A long header of the flow never waits: the channel.
              if (auto e = send_from(40010, server, false, 0, 0xc0); !e.empty()) return e;
              if (auto got = left(); got != "native +0, channel +1") return "long: " + got;
              // Three short headers wait until `due` (the native switch's end), then leave
              // natively, on the route their socket gave them.
              for (int i = 0; i < 3; ++i) {
                if (auto e = send_from(40010, server, false, 0); !e.empty()) return e;
              }
              if (auto got = left(); got != "native +0, channel +0") return "queued: " + got;
              const common::Timestamp now = net::monotonic_now();
              const common::Timestamp due = now + std::chrono::milliseconds(20);
              int seen = 0;
              queue->drain(
                  [&](const net::QueuedPacket&) -> net::PacketVerdict {
                    ++seen;
                    return {std::nullopt, due};
                  },
                  now);
              if (seen != 3) return "decided " + std::to_string(seen) + " of 3";
              if (auto got = left(); got != "native +0, channel +0") return "before due: " + got;
              queue->release_due(due);
              if (auto got = left(); got != "native +3, channel +0") return "at due: " + got;
              // A short header decided for the channel (a destination that does not migrate)
              // is routed again by its mark, into the channel.
              if (auto e = send_from(40010, server, false, 0); !e.empty()) return e;
              queue->drain(
                  [&](const net::QueuedPacket& p) -> net::PacketVerdict {
                    return {(p.mark & ~spec.mark_mask) | spec.mark_channel};
                  },
                  net::monotonic_now());
              if (auto got = left(); got != "native +0, channel +1") return "channel: " + got;
              // The flow moved: out of switching, into routed: natively, past the queue.
              const SetElementOp move[2] = {
                  {true, FlowSet::routed, flow("198.18.70.2", 40010, server), {}},
                  {false, FlowSet::switching, flow("198.18.70.2", 40010, server), {}}};
              if (auto done = writer.apply(spec.table, std::span(move, 2)); !done) {
                return "move: " + done.error().first;
              }
              if (auto e = send_from(40010, server, true, 0); !e.empty()) return e;
              if (auto got = left(); got != "native +1, channel +0") return "moved: " + got;
              // Another flow, never switching, takes the channel.
              if (auto e = send_from(40011, server, true, 0); !e.empty()) return e;
              if (auto got = left(); got != "native +0, channel +1") return "other: " + got;
              // The daemon dies while it holds packets: its socket closed without verdicts,
              // as kill -9 closes it. The kernel drops what it held, read (two, deferred to
              // a switch that never comes) or not (one); nothing leaves. The flow's next
              // short header then leaves natively (bypass), and its long headers still take
              // the channel.
              const SetElementOp held{true, FlowSet::switching,
                                      flow("198.18.70.2", 40012, server),
                                      std::chrono::seconds(30)};
              if (auto done = writer.apply(spec.table, std::span(&held, 1)); !done) {
                return "add held: " + done.error().first;
              }
              for (int i = 0; i < 2; ++i) {
                if (auto e = send_from(40012, server, false, 0); !e.empty()) return e;
              }
              int deferred = 0;
              queue->drain(
                  [&](const net::QueuedPacket&) -> net::PacketVerdict {
                    ++deferred;
                    return {std::nullopt, net::monotonic_now() + std::chrono::seconds(10)};
                  },
                  net::monotonic_now());
              if (deferred != 2) return "deferred " + std::to_string(deferred) + " of 2";
              if (auto e = send_from(40012, server, false, 0); !e.empty()) return e;
              if (auto got = left(); got != "native +0, channel +0") return "held: " + got;
              queue.reset();
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
              if (auto got = left(); got != "native +0, channel +0") return "died: " + got;
              if (auto e = send_from(40012, server, false, 0); !e.empty()) return e;
              if (auto got = left(); got != "native +1, channel +0") {
                return "after death, short: " + got;
              }
              if (auto e = send_from(40012, server, false, 0, 0xc0); !e.empty()) return e;
              if (auto got = left(); got != "native +0, channel +1") {
                return "after death, long: " + got;
              }
              return "";
            }),
            "");
}

TEST(RoutedFlows, ElementTextAndKey) {
  const common::FlowKey v4 = flow("198.18.1.2", 40000, "198.18.10.10");
  EXPECT_EQ(set_name(FlowSet::routed, v4), "routed4");
  EXPECT_EQ(add_element_text("quicstep", FlowSet::routed, v4, {}),
            "add element inet quicstep routed4 { 198.18.10.10 . 40000 . 443 }\n");
  EXPECT_EQ(delete_element_text("quicstep", FlowSet::routed, v4),
            "delete element inet quicstep routed4 { 198.18.10.10 . 40000 . 443 }\n");
  const std::vector<std::uint8_t> want = {198, 18, 10, 10, 0x9c, 0x40, 0, 0, 0x01, 0xbb, 0, 0};
  EXPECT_EQ(set_element_key(FlowSet::routed, v4), want);
  common::FlowKey v6 = v4;
  v6.client = address("2001:db8:1::2");
  v6.server = address("2001:db8:10::10");
  EXPECT_EQ(set_name(FlowSet::routed, v6), "routed6");
  EXPECT_EQ(set_element_key(FlowSet::routed, v6).size(), 24u);
  EXPECT_EQ(add_element_text("quicstep", FlowSet::switching, v4, std::chrono::seconds(30)),
            "add element inet quicstep switching4 { 198.18.10.10 . 40000 . 443 timeout 30s }\n");
  EXPECT_EQ(set_element_key(FlowSet::switching, v4), want);
}

}  // namespace
}  // namespace quicstep::client::kernel
