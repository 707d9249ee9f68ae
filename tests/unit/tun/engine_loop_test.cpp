// The engine's event loop over real descriptors, in-process: SOCK_SEQPACKET pairs stand in
// for the TUN (one IP packet per read and write, as IFF_TUN | IFF_NO_PI gives) and for the
// WireGuard helper's fd 3, and a UDP socket on loopback is the QUIC server. What the
// application sends and gets is read at the far ends, as a TUN device's user would.
#include "client/tun/io/engine_loop.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <linux/udp.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "client/tun/udp_gso_batch.hpp"
#include "common/ip_packet.hpp"
#include "unit/client/client_packets.hpp"

namespace quicstep::client::tun {
namespace {

using namespace core::testing;  // NOLINT: the test packets

constexpr const char* kApp = "198.18.0.2";  // the TUN's (tunnel) address
constexpr const char* kServer = "127.0.0.1";

std::pair<net::UniqueFd, net::UniqueFd> seqpacket_pair() {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  return {net::UniqueFd(fds[0]), net::UniqueFd(fds[1])};
}

// One message from `fd` within `ms`, or empty.
ByteVec read_one(int fd, int ms = 3000) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return {};
  ByteVec buf(65536);
  const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
  buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return buf;
}

struct Server {
  net::UniqueFd fd{socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  std::uint16_t port = 0;
  Server() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
};

ByteVec out(std::uint16_t sport, const ByteVec& quic, std::uint16_t dport) {
  return udp4(sport, dport, quic, kApp, kServer);
}
ByteVec in(std::uint16_t dport, const ByteVec& quic, std::uint16_t sport) {
  return udp4(sport, dport, quic, kServer, kApp);
}

// What the server received natively, and from where (the relay's socket).
struct Received {
  ByteVec datagram;
  sockaddr_storage from{};
  socklen_t from_len = 0;
};

// A flow from the application's port `sport`: its Initial leaves through the channel
// unchanged, the server's Initial comes back through the channel into the TUN unchanged,
// its Finished leaves through the channel; then `quic`, a short header, leaves natively
// from a relay socket of its own after the switch, and nothing of it through the channel.
Received handshake_then_short_header(int app, int helper, const Server& server,
                                     std::uint16_t sport, const ByteVec& quic) {
  const ByteVec initial = out(sport, initial_v1(), server.port);
  send(app, initial.data(), initial.size(), 0);
  EXPECT_EQ(read_one(helper), initial);
  const ByteVec answer = in(sport, initial_v1(), server.port);
  send(helper, answer.data(), answer.size(), 0);
  EXPECT_EQ(read_one(app), answer);
  const ByteVec finished = out(sport, handshake_v1(), server.port);
  send(app, finished.data(), finished.size(), 0);
  EXPECT_EQ(read_one(helper), finished);
  const ByteVec short_packet = out(sport, quic, server.port);
  send(app, short_packet.data(), short_packet.size(), 0);
  Received r;
  pollfd p{server.fd.get(), POLLIN, 0};
  if (poll(&p, 1, 3000) != 1) {
    ADD_FAILURE() << "no short header reached the server natively";
    return r;
  }
  r.datagram.resize(2048);
  r.from_len = sizeof r.from;
  const ssize_t n = recvfrom(server.fd.get(), r.datagram.data(), r.datagram.size(), 0,
                             reinterpret_cast<sockaddr*>(&r.from), &r.from_len);
  r.datagram.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  EXPECT_EQ(r.datagram, quic);
  EXPECT_TRUE(read_one(helper, 100).empty()) << "the short header also went to the channel";
  return r;
}

// The loop run on a thread of its own, stopped and joined however the test ends.
struct RunningLoop {
  EngineLoop& loop;
  std::thread thread;
  explicit RunningLoop(EngineLoop& l) : loop(l), thread([this] { loop.run(); }) {}
  void stop() {
    loop.stop();
    if (thread.joinable()) thread.join();
  }
  ~RunningLoop() { stop(); }
};

// An eventfd the loop watches: a write to it is a network change (EngineLoop::network_changed
// on the loop's thread, as the frontend's rtnetlink watch calls it).
struct NetworkChangeTrigger {
  net::UniqueFd fd{eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
  bool watched = false;
  explicit NetworkChangeTrigger(EngineLoop& loop) {
    watched = loop.watch_descriptor(fd.get(), [this, &loop] {
      std::uint64_t value = 0;
      [[maybe_unused]] const ssize_t r = read(fd.get(), &value, sizeof value);
      loop.network_changed();
    });
  }
};

// A loop whose QUIC port is the server's, with the application's end of the TUN and the
// helper's end of the channel held by the test.
struct PlainRig {
  Server server;
  net::UniqueFd tun_app, helper;
  NoProtector protector;
  std::unique_ptr<EngineLoop> loop;
  PlainRig() {
    EngineConfig config;
    config.policy.quic_ports = {server.port};
    auto [app, tun_engine] = seqpacket_pair();
    auto [help, channel_engine] = seqpacket_pair();
    tun_app = std::move(app);
    helper = std::move(help);
    loop = std::make_unique<EngineLoop>(config, std::move(tun_engine), std::move(channel_engine),
                                        protector, 1);
  }
};

TEST(EngineLoop, CarriesHandshakesThroughTheChannelAndShortHeadersNatively) {
  PlainRig rig;
  EngineLoop& loop = *rig.loop;
  std::string ended;
  std::thread runner([&] { ended = loop.run(); });

  // DNS goes to the helper as it is; the flow's handshake too, its short header natively.
  const ByteVec dns = udp4(5353, 53, ByteVec(30, 1), kApp, "198.18.0.53");
  ASSERT_EQ(send(rig.tun_app.get(), dns.data(), dns.size(), 0), static_cast<ssize_t>(dns.size()));
  EXPECT_EQ(read_one(rig.helper.get()), dns);
  const Received first = handshake_then_short_header(rig.tun_app.get(), rig.helper.get(),
                                                     rig.server, 40000, short_header(200, 0x41));
  ASSERT_GT(first.from_len, 0u);

  // The server answers the relay's address: the application gets it from the server's
  // address and port, on its own.
  const ByteVec reply = short_header(300, 0x47);
  sendto(rig.server.fd.get(), reply.data(), reply.size(), 0,
         reinterpret_cast<const sockaddr*>(&first.from), first.from_len);
  const ByteVec delivered = read_one(rig.tun_app.get());
  auto parsed = common::parse_ip_packet(delivered);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->src.to_string(), kServer);
  EXPECT_EQ(parsed->dst.to_string(), kApp);
  EXPECT_EQ(parsed->src_port, rig.server.port);
  EXPECT_EQ(parsed->dst_port, 40000);
  EXPECT_EQ(ByteVec(parsed->payload.begin(), parsed->payload.end()), reply);

  // The helper dying ends the loop, and says so.
  rig.helper.reset();
  runner.join();
  EXPECT_EQ(ended, "the WireGuard helper closed its end");
  EXPECT_EQ(loop.engine().classifier().counters().confirmed, 1u);
  EXPECT_EQ(loop.engine().counters().to_native.packets, 1u);
  EXPECT_EQ(loop.engine().counters().from_native.packets, 1u);
  EXPECT_EQ(loop.counters().native_send_failed, 0u);
}

TEST(EngineLoop, ARefusedProtectSendsThroughTheChannel) {
  struct Refusing : Protector {
    std::string protect(int) override { return "refused"; }
    std::string describe() const override { return "refusing"; }
  } protector;
  Server server;
  EngineConfig config;
  config.policy.quic_ports = {server.port};
  auto [tun_app, tun_engine] = seqpacket_pair();
  auto [helper, channel_engine] = seqpacket_pair();
  EngineLoop loop(config, std::move(tun_engine), std::move(channel_engine), protector, 1);
  std::thread runner([&] { loop.run(); });
  const ByteVec short_packet = out(40001, short_header(), server.port);
  send(tun_app.get(), short_packet.data(), short_packet.size(), 0);
  EXPECT_EQ(read_one(helper.get()), short_packet);
  pollfd p{server.fd.get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0) << "a packet left from an unprotected socket";
  loop.stop();
  runner.join();
  EXPECT_EQ(loop.counters().protect_failed, 1u);
  EXPECT_EQ(loop.counters().last_error, "refused");
}

// A network change closes every relay's socket and opens it again on the new network.
// Datagrams the server sent before the change and that the loop has not read yet must
// reach the application first: they may be the last the server sent to the old address,
// and an application that has acknowledged everything else sends nothing more (no probe
// timer for ACKs), so without them the server never learns the new address. Here the
// change arrives on the loop's own thread (the frontend's netlink callback) with three
// answers queued on the relay's socket.
TEST(EngineLoop, ANetworkChangeDeliversWhatTheOldRelaySocketHolds) {
  PlainRig rig;
  EngineLoop& loop = *rig.loop;
  net::UniqueFd change(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  sockaddr_storage relay_address{};
  socklen_t relay_address_len = 0;
  const std::vector<ByteVec> last = {short_header(400, 0x51), short_header(401, 0x52),
                                     short_header(402, 0x53)};
  ASSERT_TRUE(loop.watch_descriptor(change.get(), [&] {
    std::uint64_t value = 0;
    [[maybe_unused]] const ssize_t r = read(change.get(), &value, sizeof value);
    // Queued on the relay's socket (loopback: at once), while this thread cannot read it.
    for (const ByteVec& d : last) {
      sendto(rig.server.fd.get(), d.data(), d.size(), 0,
             reinterpret_cast<const sockaddr*>(&relay_address), relay_address_len);
    }
    loop.network_changed();
  }));
  RunningLoop running(loop);

  const Received first = handshake_then_short_header(rig.tun_app.get(), rig.helper.get(),
                                                     rig.server, 40002, short_header(200, 0x41));
  ASSERT_GT(first.from_len, 0u);
  relay_address = first.from;
  relay_address_len = first.from_len;

  const std::uint64_t one = 1;
  ASSERT_EQ(write(change.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  for (const ByteVec& d : last) {
    const ByteVec delivered = read_one(rig.tun_app.get(), 2000);
    ASSERT_FALSE(delivered.empty()) << "an answer queued before the change was lost";
    auto parsed = common::parse_ip_packet(delivered);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->dst_port, 40002);
    EXPECT_EQ(ByteVec(parsed->payload.begin(), parsed->payload.end()), d);
  }
  // The application's answer leaves natively from the relay opened again on the new
  // network (in the lab the server sees the client's new address there and migrates).
  const ByteVec ack = out(40002, short_header(201, 0x42), rig.server.port);
  send(rig.tun_app.get(), ack.data(), ack.size(), 0);
  pollfd p{rig.server.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 3000), 1) << "the answer after the change did not leave natively";
  ByteVec got(2048);
  const ssize_t n = recv(rig.server.fd.get(), got.data(), got.size(), 0);
  ASSERT_GT(n, 0);
  got.resize(static_cast<std::size_t>(n));
  EXPECT_EQ(got, short_header(201, 0x42));
  running.stop();
  EXPECT_EQ(loop.engine().counters().network_changes, 1u);
  EXPECT_EQ(loop.engine().counters().from_native.packets, 3u);
}

// A TUN with a virtio header before every packet (IFF_VNET_HDR): what the application side
// of the seqpacket stand-in sends and reads carries it.
struct Framed {
  int fd;
  void send_packet(const ByteVec& packet) const {
    ByteVec framed(kVirtioNetHdrLength, 0);
    framed.insert(framed.end(), packet.begin(), packet.end());
    ASSERT_EQ(send(fd, framed.data(), framed.size(), 0), static_cast<ssize_t>(framed.size()));
  }
  // The next message: its virtio header and the packet after it.
  std::pair<VirtioNetHdr, ByteVec> read(int ms = 3000) const {
    const ByteVec m = read_one(fd, ms);
    VirtioNetHdr h;
    if (m.size() < kVirtioNetHdrLength) return {h, {}};
    std::memcpy(&h, m.data(), sizeof h);
    return {h, ByteVec(m.begin() + kVirtioNetHdrLength, m.end())};
  }
};

// Takes flow 40000 -> server through its handshake to the native path; returns the relay
// socket's address as the server sees it.
sockaddr_storage go_native(const Framed& app, int helper, const Server& server) {
  app.send_packet(out(40000, initial_v1(), server.port));
  EXPECT_FALSE(read_one(helper).empty());
  const ByteVec answer = in(40000, initial_v1(), server.port);
  send(helper, answer.data(), answer.size(), 0);
  const auto [h, delivered] = app.read();
  EXPECT_EQ(h.gso_type, kVirtioGsoNone);
  EXPECT_EQ(delivered, answer) << "the channel's packet, framed";
  app.send_packet(out(40000, handshake_v1(), server.port));
  EXPECT_FALSE(read_one(helper).empty());
  app.send_packet(out(40000, short_header(200, 0x41), server.port));
  sockaddr_storage from{};
  socklen_t from_len = sizeof from;
  ByteVec got(2048);
  pollfd p{server.fd.get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 3000), 1) << "no short header reached the server natively";
  recvfrom(server.fd.get(), got.data(), got.size(), 0, reinterpret_cast<sockaddr*>(&from),
           &from_len);
  return from;
}

// What the server sends the relay in one UDP GSO send: ten 1,200-byte datagrams and a
// 500-byte one (on loopback a UDP_GRO socket reads them in one go).
ByteVec send_burst(const Server& server, const sockaddr_storage& relay) {
  ByteVec burst;
  for (int i = 0; i < 10; ++i) {
    ByteVec d = short_header(1200, 0x40 | static_cast<std::uint8_t>(i));
    burst.insert(burst.end(), d.begin(), d.end());
  }
  const ByteVec last = short_header(500, 0x4f);
  burst.insert(burst.end(), last.begin(), last.end());
  const int segment = 1200;
  EXPECT_EQ(setsockopt(server.fd.get(), IPPROTO_UDP, UDP_SEGMENT, &segment, sizeof segment), 0);
  EXPECT_EQ(sendto(server.fd.get(), burst.data(), burst.size(), 0,
                   reinterpret_cast<const sockaddr*>(&relay), sizeof(sockaddr_in)),
            static_cast<ssize_t>(burst.size()));
  return burst;
}

// One loop over the seqpacket stand-ins, its TUN framed with a virtio header and the
// offloads of `format`, and flow 40000 taken to the native path (`relay`: the address the
// server sees). `before_run` may add to the loop before it runs (a control socket).
struct OffloadRig {
  Server server;
  std::pair<net::UniqueFd, net::UniqueFd> tun = seqpacket_pair();
  std::pair<net::UniqueFd, net::UniqueFd> channel = seqpacket_pair();
  NoProtector protector;
  std::unique_ptr<EngineLoop> loop;
  std::thread runner;
  Framed app{-1};
  sockaddr_storage relay{};

  explicit OffloadRig(TunFormat format, const std::function<void(EngineLoop&)>& before_run = {}) {
    EngineConfig config;
    config.policy.quic_ports = {server.port};
    loop = std::make_unique<EngineLoop>(config, std::move(tun.second), std::move(channel.second),
                                        protector, 1);
    loop->use_tun_format(format);
    if (before_run) before_run(*loop);
    runner = std::thread([this] { loop->run(); });
    app = Framed{tun.first.get()};
    relay = go_native(app, channel.first.get(), server);
  }
  void finish() {
    loop->stop();
    if (runner.joinable()) runner.join();
  }
  ~OffloadRig() { finish(); }
};

// After a network change the old relay socket lingers: a server that still answers the old
// address (it has not heard from the new one: the application, waiting, says nothing) reaches
// the application; its answer leaves from the new socket; once the server answers that one,
// the old socket closes.
TEST(EngineLoop, AfterANetworkChangeTheOldRelaySocketLingersUntilTheServerMoves) {
  PlainRig rig;
  EngineLoop& loop = *rig.loop;
  NetworkChangeTrigger change(loop);
  ASSERT_TRUE(change.watched);
  RunningLoop running(loop);
  auto send_to = [&](const sockaddr_storage& to, socklen_t len, const ByteVec& d) {
    sendto(rig.server.fd.get(), d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to),
           len);
  };
  auto delivered_payload = [&](int ms) {
    const ByteVec got = read_one(rig.tun_app.get(), ms);
    if (got.empty()) return ByteVec{};
    auto parsed = common::parse_ip_packet(got);
    EXPECT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->dst_port, 40003);
    return ByteVec(parsed->payload.begin(), parsed->payload.end());
  };

  const Received first = handshake_then_short_header(rig.tun_app.get(), rig.helper.get(),
                                                     rig.server, 40003, short_header(200, 0x41));
  ASSERT_GT(first.from_len, 0u);
  const std::uint64_t one = 1;
  ASSERT_EQ(write(change.fd.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the change is followed

  // The server answers the old address: it reaches the application.
  send_to(first.from, first.from_len, short_header(500, 0x61));
  EXPECT_EQ(delivered_payload(2000), short_header(500, 0x61))
      << "the old socket closed at the change: the answer to the old address was lost";
  // The application's answer leaves from the new socket (another port).
  const ByteVec ack = out(40003, short_header(201, 0x42), rig.server.port);
  send(rig.tun_app.get(), ack.data(), ack.size(), 0);
  Received moved;
  pollfd p{rig.server.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 3000), 1);
  moved.datagram.resize(2048);
  moved.from_len = sizeof moved.from;
  ASSERT_GT(recvfrom(rig.server.fd.get(), moved.datagram.data(), moved.datagram.size(), 0,
                     reinterpret_cast<sockaddr*>(&moved.from), &moved.from_len), 0);
  EXPECT_NE(std::memcmp(&moved.from, &first.from, first.from_len), 0) << "not a new socket";
  // The server moves: the new socket's first datagram closes the old one.
  send_to(moved.from, moved.from_len, short_header(501, 0x62));
  EXPECT_EQ(delivered_payload(2000), short_header(501, 0x62));
  send_to(first.from, first.from_len, short_header(502, 0x63));
  EXPECT_TRUE(delivered_payload(300).empty()) << "the old socket still lingers";
  running.stop();
  EXPECT_EQ(loop.counters().relays_lingered, 1u);
  EXPECT_EQ(loop.counters().linger_datagrams, 1u);
  EXPECT_EQ(loop.relays_lingering(), 0u);
}

// A FastPath that records what the loop asks of it (from the loop's thread; the test reads
// a copy).
struct RecordingFastPath final : FastPath {
  struct Call {
    bool install;
    common::FlowKey flow;
    sockaddr_storage local{};  // the relay socket's address at install
  };
  bool install(const common::FlowKey& flow, int relay_fd) override {
    Call c{true, flow};
    socklen_t len = sizeof c.local;
    getsockname(relay_fd, reinterpret_cast<sockaddr*>(&c.local), &len);
    const std::lock_guard lock(mutex);
    recorded.push_back(c);
    return true;
  }
  void remove(const common::FlowKey& flow) override {
    const std::lock_guard lock(mutex);
    recorded.push_back({false, flow});
  }
  FastPathCounters counters() override { return {}; }
  std::vector<Call> calls() {
    const std::lock_guard lock(mutex);
    return recorded;
  }
  std::mutex mutex;
  std::vector<Call> recorded;
};

TEST(EngineLoop, AConfirmedFlowGoesToTheFastPathUntilANetworkChangeAndBackAfterTheServerMoves) {
  PlainRig rig;
  EngineLoop& loop = *rig.loop;
  RecordingFastPath fast;
  loop.use_fast_path(&fast);
  NetworkChangeTrigger change(loop);
  ASSERT_TRUE(change.watched);
  RunningLoop running(loop);
  auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(150)); };
  auto send_to = [&](const Received& to, const ByteVec& d) {
    sendto(rig.server.fd.get(), d.data(), d.size(), 0,
           reinterpret_cast<const sockaddr*>(&to.from), to.from_len);
  };
  auto next_datagram = [&] {
    Received r;
    pollfd p{rig.server.fd.get(), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 3000), 1);
    r.datagram.resize(2048);
    r.from_len = sizeof r.from;
    EXPECT_GT(recvfrom(rig.server.fd.get(), r.datagram.data(), r.datagram.size(), 0,
                       reinterpret_cast<sockaddr*>(&r.from), &r.from_len), 0);
    return r;
  };

  const Received first = handshake_then_short_header(rig.tun_app.get(), rig.helper.get(),
                                                     rig.server, 40004, short_header(200, 0x41));
  ASSERT_GT(first.from_len, 0u);
  pause();
  EXPECT_TRUE(fast.calls().empty()) << "installed before the server answered natively";
  // The server's first native answer confirms the move: the flow goes to the fast path,
  // from the relay socket's address.
  send_to(first, short_header(500, 0x61));
  EXPECT_FALSE(read_one(rig.tun_app.get()).empty());
  pause();
  std::vector<RecordingFastPath::Call> calls = fast.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].install);
  EXPECT_EQ(calls[0].flow.client.to_string(), kApp);
  EXPECT_EQ(calls[0].flow.client_port, 40004);
  EXPECT_EQ(calls[0].flow.server_port, rig.server.port);
  EXPECT_EQ(std::memcmp(&calls[0].local, &first.from, first.from_len), 0)
      << "not the relay socket the server knows";

  // A network change: the flow leaves the fast path (its socket's address is the old one).
  const std::uint64_t one = 1;
  ASSERT_EQ(write(change.fd.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  pause();
  calls = fast.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_FALSE(calls[1].install);
  // The engine relays it from the new socket; not back on the fast path before the server
  // answers there.
  const ByteVec next = out(40004, short_header(201, 0x42), rig.server.port);
  send(rig.tun_app.get(), next.data(), next.size(), 0);
  const Received moved = next_datagram();
  pause();
  EXPECT_EQ(fast.calls().size(), 2u) << "installed before the server followed";
  send_to(moved, short_header(501, 0x62));
  EXPECT_FALSE(read_one(rig.tun_app.get()).empty());
  pause();
  running.stop();
  calls = fast.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_TRUE(calls[2].install);
  EXPECT_EQ(std::memcmp(&calls[2].local, &moved.from, moved.from_len), 0)
      << "installed with the old socket's address";
}

TEST(EngineLoop, WithOffloadsWhatARelayReadsInOneGoIsOneGsoWriteIntoTheTun) {
  OffloadRig rig({.vnet_header = true, .udp_gso = true, .relay_gro = true});
  const ByteVec burst = send_burst(rig.server, rig.relay);

  const auto [h, packet] = rig.app.read();
  EXPECT_EQ(h.gso_type, kVirtioGsoUdpL4);
  EXPECT_EQ(h.flags, kVirtioNeedsCsum);
  EXPECT_EQ(h.gso_size, 1200);
  auto parsed = common::parse_ip_packet(packet);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->src.to_string(), kServer);
  EXPECT_EQ(parsed->dst.to_string(), kApp);
  EXPECT_EQ(parsed->src_port, rig.server.port);
  EXPECT_EQ(parsed->dst_port, 40000);
  EXPECT_EQ(ByteVec(parsed->payload.begin(), parsed->payload.end()), burst);
  EXPECT_TRUE(read_one(rig.app.fd, 100).empty()) << "more than one write for the burst";
  rig.finish();
  EXPECT_EQ(rig.loop->counters().relay_gro_reads, 1u);
  EXPECT_EQ(rig.loop->counters().tun_gso_writes, 1u);
  EXPECT_EQ(rig.loop->counters().tun_gso_segments, 11u);
  // The core saw eleven datagrams, as without offloads.
  EXPECT_EQ(rig.loop->engine().counters().from_native.packets, 11u);
}

TEST(EngineLoop, WithoutUdpGsoTheBurstIsElevenFramedPacketsInOrder) {
  OffloadRig rig({.vnet_header = true, .udp_gso = false, .relay_gro = true});
  const ByteVec burst = send_burst(rig.server, rig.relay);
  std::size_t offset = 0;
  for (int i = 0; i < 11; ++i) {
    const auto [h, packet] = rig.app.read();
    EXPECT_EQ(h.gso_type, kVirtioGsoNone) << i;
    EXPECT_EQ(h.flags, 0) << i;
    auto parsed = common::parse_ip_packet(packet);
    ASSERT_TRUE(parsed.ok()) << i;
    const std::size_t size = i < 10 ? 1200 : 500;
    EXPECT_EQ(ByteVec(parsed->payload.begin(), parsed->payload.end()),
              ByteVec(burst.begin() + static_cast<std::ptrdiff_t>(offset),
                      burst.begin() + static_cast<std::ptrdiff_t>(offset + size)))
        << "datagram " << i;
    offset += size;
  }
  rig.finish();
  EXPECT_EQ(rig.loop->counters().relay_gro_reads, 1u);
  EXPECT_EQ(rig.loop->counters().tun_gso_writes, 0u);
}

// A listening unix socket at an abstract address of its own.
net::UniqueFd control_listener() {
  net::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = "qs-loop-test-" + std::to_string(getpid());
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
  EXPECT_EQ(listen(fd.get(), 4), 0);
  return fd;
}

TEST(EngineLoop, WithOffloadsARunReadFromTheTunLeavesItsRelayAsOneUdpSegmentSend) {
  sockaddr_un addr{};
  socklen_t addr_len = sizeof addr;
  OffloadRig rig({.vnet_header = true, .udp_gso = false, .relay_gro = false, .relay_gso = true},
                 [&](EngineLoop& loop) {
                   net::UniqueFd listener = control_listener();
                   getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &addr_len);
                   loop.serve_control(std::move(listener),
                                      [](const std::string&) { return std::string("{}\n"); });
                 });
  const int on = 1;  // the server reads a GSO send in one go, with its segment size
  ASSERT_EQ(setsockopt(rig.server.fd.get(), IPPROTO_UDP, UDP_GRO, &on, sizeof on), 0);
  // The server answers on the new path: the flow is confirmed native.
  const ByteVec answer = short_header(100, 0x41);
  sendto(rig.server.fd.get(), answer.data(), answer.size(), 0,
         reinterpret_cast<const sockaddr*>(&rig.relay), sizeof(sockaddr_in));
  ASSERT_FALSE(rig.app.read().second.empty());

  // Hold the loop in a control request that says nothing (it waits 200 ms for the line),
  // so that the run below is read from the TUN in one drain: written 100 ms into the hold,
  // or, where the loop is too slow to take the request by then, before it wakes for both.
  net::UniqueFd idle(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(connect(idle.get(), reinterpret_cast<sockaddr*>(&addr), addr_len), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ByteVec run;
  for (int i = 0; i < 11; ++i) {
    const ByteVec d = short_header(i < 10 ? 1200 : 500, static_cast<std::uint8_t>(0x40 | i));
    run.insert(run.end(), d.begin(), d.end());
    rig.app.send_packet(out(40000, d, rig.server.port));
  }
  pollfd p{rig.server.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 3000), 1);
  ByteVec got(65536);
  iovec iov{got.data(), got.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(rig.server.fd.get(), &msg, 0);
  ASSERT_GT(n, 0);
  got.resize(static_cast<std::size_t>(n));
  int segment = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) std::memcpy(&segment, CMSG_DATA(c), sizeof segment);
  }
  EXPECT_EQ(got, run) << "the eleven datagrams, in order, in one read";
  EXPECT_EQ(segment, 1200);
  rig.finish();
  EXPECT_EQ(rig.loop->counters().relay_gso_sends, 1u);
  EXPECT_EQ(rig.loop->counters().relay_gso_segments, 11u);
  EXPECT_EQ(rig.loop->engine().counters().to_native.packets, 12u);  // with go_native's first
}

TEST(EngineLoop, StopEndsTheLoop) {
  auto [tun_app, tun_engine] = seqpacket_pair();
  auto [helper, channel_engine] = seqpacket_pair();
  NoProtector protector;
  EngineLoop loop(EngineConfig{}, std::move(tun_engine), std::move(channel_engine), protector, 1);
  std::string ended;
  std::thread runner([&] { ended = loop.run(); });
  loop.stop();
  runner.join();
  EXPECT_EQ(ended, "stopped");
}

}  // namespace
}  // namespace quicstep::client::tun
