// UdpSocketWatch against the kernel, in a private network namespace (root only; skipped
// otherwise): a UDP socket is found on its port, connected or not, and its close is
// announced with its ports and peer; socket_may_carry() matches flows to sockets.
#include "client/kernel/udp_socket_watch.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "net/process.hpp"
#include "unit/client/private_netns.hpp"

namespace quicstep::client::kernel {
namespace {

using common::FlowKey;
using common::IpAddress;

const IpAddress kServer = IpAddress::v4({127, 0, 0, 2});
const IpAddress kOther = IpAddress::v4({127, 0, 0, 3});

// A UDP socket on `port` of the namespace's loopback, connected to kServer:443 when
// `connected` (connect() sends nothing).
int udp_socket(std::uint16_t port, bool connected) {
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  if (connected) {
    sockaddr_in p{};
    p.sin_family = AF_INET;
    p.sin_port = htons(443);
    inet_pton(AF_INET, "127.0.0.2", &p.sin_addr);
    if (connect(s, reinterpret_cast<sockaddr*>(&p), sizeof p) != 0) return -1;
  }
  return s;
}

// The announced destructions within `ms`.
std::vector<UdpSocketId> closed_within(UdpSocketWatch& w, int ms) {
  std::vector<UdpSocketId> out;
  pollfd p{w.fd(), POLLIN, 0};
  while (out.empty() && ::poll(&p, 1, ms) > 0) {
    w.drain([&](const UdpSocketId& s) { out.push_back(s); });
  }
  return out;
}

std::string watch_sockets() {
  if (!net::run_process({"ip", "link", "set", "lo", "up"}).ok()) return "lo up failed";
  UdpSocketWatch w;
  if (auto opened = w.open(); !opened) return opened.error().message;
  const int connected = udp_socket(40000, true);
  const int unconnected = udp_socket(40001, false);
  if (connected < 0 || unconnected < 0) return "socket setup failed";

  auto on40000 = w.sockets_on_port(40000);
  if (!on40000 || on40000->size() != 1) return "the connected socket is not found on its port";
  const UdpSocketId& s = on40000->front();
  if (!(s.remote == kServer && s.remote_port == 443 && s.local_port == 40000)) {
    return "wrong peer: " + s.remote.to_string();
  }
  const FlowKey flow{IpAddress::v4({127, 0, 0, 1}), kServer, 40000, 443, 17};
  if (!socket_may_carry(s, flow)) return "the connected socket cannot carry its own flow";
  FlowKey other = flow;
  other.server = kOther;
  if (socket_may_carry(s, other)) return "a connected socket carries another peer's flow";
  other = flow;
  other.server_port = 8443;
  if (socket_may_carry(s, other)) return "a connected socket carries another port's flow";
  auto on40001 = w.sockets_on_port(40001);
  if (!on40001 || on40001->size() != 1) return "the unconnected socket is not found";
  FlowKey any = flow;
  any.client_port = 40001;
  any.server = kOther;
  if (!socket_may_carry(on40001->front(), any)) return "an unconnected socket carries any peer";
  if (auto none = w.sockets_on_port(40002); !none || !none->empty()) return "a port with no socket";
  // The exact lookup agrees: the connected socket carries its own flow only, the unconnected
  // one any peer's on its port, a port without a socket nothing.
  if (w.may_carry(flow) != true) return "may_carry: the connected socket's own flow";
  other = flow;
  other.server = kOther;
  if (w.may_carry(other) != false) return "may_carry: another peer's flow on a connected port";
  if (w.may_carry(any) != true) return "may_carry: any peer on the unconnected port";
  FlowKey nobody = flow;
  nobody.client_port = 40002;
  if (w.may_carry(nobody) != false) return "may_carry: a port with no socket";

  if (!closed_within(w, 0).empty()) return "a destruction announced before any close";
  close(connected);
  auto closed = closed_within(w, 2000);
  if (closed.size() != 1) return "close not announced (" + std::to_string(closed.size()) + ")";
  if (!(closed[0].local_port == 40000 && closed[0].remote == kServer &&
        closed[0].remote_port == 443)) {
    return "the announcement names another socket";
  }
  if (auto gone = w.sockets_on_port(40000); !gone || !gone->empty()) {
    return "the closed socket is still found";
  }
  if (w.may_carry(flow) != false) return "may_carry: the closed socket's flow";
  close(unconnected);
  closed = closed_within(w, 2000);
  if (closed.size() != 1 || closed[0].local_port != 40001 || closed[0].remote_port != 0) {
    return "the unconnected socket's close not announced";
  }
  if (w.destructions_seen() != 2 || w.overflows() != 0) return "counters";
  return {};
}

TEST(UdpSocketWatch, FindsSocketsAndHearsThemClose) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  EXPECT_EQ(in_private_netns(watch_sockets), "");
}

TEST(UdpSocketWatch, MayCarryMatchesPortsAndPeer) {
  const FlowKey flow{IpAddress::v4({198, 18, 0, 2}), kServer, 40000, 443, 17};
  UdpSocketId s;
  s.local_port = 40000;
  EXPECT_TRUE(socket_may_carry(s, flow));  // unconnected, unbound
  s.local_port = 40001;
  EXPECT_FALSE(socket_may_carry(s, flow));
  s.local_port = 40000;
  s.remote = kServer;
  s.remote_port = 443;
  EXPECT_TRUE(socket_may_carry(s, flow));
  s.remote = kOther;
  EXPECT_FALSE(socket_may_carry(s, flow));
  // An IPv6 flow and an unconnected IPv6 socket (remote ::).
  std::array<std::uint8_t, 16> v6{0x20, 0x01, 0x0d, 0xb8};
  v6[15] = 10;
  const FlowKey flow6{IpAddress::v6({0x20, 0x01, 0x0d, 0xb8}), IpAddress::v6(v6), 40000, 443, 17};
  UdpSocketId s6;
  s6.local_port = 40000;
  s6.remote = IpAddress::v6({});
  EXPECT_TRUE(socket_may_carry(s6, flow6));
}

}  // namespace
}  // namespace quicstep::client::kernel
