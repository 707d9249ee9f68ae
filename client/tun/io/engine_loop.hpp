// EngineLoop: the TUN engine's one event loop (epoll, single-threaded: Android's seccomp
// filter traps the calls glibc threads make in a static program). It owns the descriptors
// and carries out what EngineCore decides (it is the core's EngineIo):
//   tun      one IP packet per read and per write: a TUN device (IFF_TUN | IFF_NO_PI), or
//            in tests one end of a SOCK_SEQPACKET pair
//   channel  the engine's end of the WireGuard helper's SOCK_SEQPACKET pair (its fd 3)
//   relays   one UDP socket per native flow: non-blocking, protected before it is connected
//            to the flow's server, so nothing ever leaves it unprotected
//   a timerfd armed for EngineCore::next_expiry()
// Reads are batched (up to kBatch per descriptor per wake-up) so that one busy flow cannot
// starve the others; buffers are allocated once. Offloads, where the TUN and kernel have
// them (TunFormat, set by the frontend): a relay socket reads with UDP_GRO (one read, many
// datagrams of the server's), and what one relay drain writes back is joined into UDP GSO
// super-packets (UdpGsoBatch), one TUN write each; the other way, a run of one flow's
// datagrams read from the TUN in one drain leaves its relay as one UDP_SEGMENT send. A packet the kernel will not take now
// (EAGAIN, ENOBUFS) is dropped and counted: QUIC and TCP recover, and the loop never blocks.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/tun/engine_core.hpp"
#include "client/tun/udp_gso_batch.hpp"
#include "client/tun/io/fast_path.hpp"
#include "client/tun/io/protector.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::tun {

// How the TUN descriptor frames packets, and what the kernel takes on it.
struct TunFormat {
  bool vnet_header = false;  // IFF_VNET_HDR: a virtio_net_hdr before every packet
  bool udp_gso = false;      // writes may be VIRTIO_NET_HDR_GSO_UDP_L4 (Linux 6.2+)
  bool relay_gro = false;    // relay sockets read with UDP_GRO
  bool relay_gso = false;    // a run of one flow's datagrams read from the TUN in one drain
                             // leaves its relay as one UDP_SEGMENT send
};

struct LoopCounters {
  std::uint64_t tun_write_dropped = 0;      // the TUN would not take a packet
  std::uint64_t channel_send_dropped = 0;   // the helper's pair was full
  std::uint64_t native_send_failed = 0;     // a relay's send failed (no route, ENOBUFS)
  std::uint64_t relay_socket_failed = 0;    // socket(), connect() failed
  std::uint64_t protect_failed = 0;         // the protector refused
  std::uint64_t wakeups = 0;
  std::uint64_t timer_arms = 0;             // timerfd_settime calls
  std::uint64_t timer_wakeups = 0;          // wake-ups by the timer
  std::uint64_t tun_gso_writes = 0;         // super-packets written
  std::uint64_t tun_gso_segments = 0;       // datagrams they carried
  std::uint64_t tun_gso_refused = 0;        // the kernel refused one: GSO off from then on
  std::uint64_t relay_reads = 0;            // relay reads that returned data
  std::uint64_t relay_gro_reads = 0;        // relay reads that returned > 1 datagram
  std::uint64_t relay_gso_sends = 0;        // UDP_SEGMENT sends of > 1 datagram
  std::uint64_t relay_gso_segments = 0;     // datagrams they carried
  std::uint64_t relay_gso_refused = 0;      // the kernel refused one: UDP_SEGMENT off
  std::uint64_t tun_read_dropped = 0;       // a read the engine cannot take (GSO from the TUN)
  std::uint64_t relays_lingered = 0;        // sockets kept on the old network at a change
  std::uint64_t linger_datagrams = 0;       // datagrams the server sent there meanwhile
  std::string last_error;                   // the last socket or protect failure, in words
};

class EngineLoop final : public EngineIo {
 public:
  static constexpr std::size_t kBatch = 64;
  static constexpr std::size_t kMaxPacket = 65535;

  // `protector` must outlive the loop. The descriptors are made non-blocking here.
  EngineLoop(const EngineConfig& config, net::UniqueFd tun, net::UniqueFd channel,
             Protector& protector, std::uint64_t seed);
  ~EngineLoop() override;

  // Runs until stop() is called (from a signal handler too) or the TUN or the channel
  // closes. Returns why it ended, in words ("stopped", kChannelClosed, kTunGone, "read tun:
  // ...").
  std::string run();
  // What run() returns when the WireGuard helper closed its end of the pair (it died)...
  static constexpr const char* kChannelClosed = "the WireGuard helper closed its end";
  // ...and when the TUN device was deleted under the engine (`ip link del`: the descriptor
  // then reads EBADFD; Linux, where the frontend can create it again).
  static constexpr const char* kTunGone = "the TUN device is gone";
  // CLOCK_MONOTONIC as a Timestamp: the clock the loop gives the engine (and its runner
  // uses for its own timing).
  static common::Timestamp now();
  // Async-signal-safe: the loop ends at its next wake-up (an eventfd wakes it).
  void stop();
  // A new WireGuard helper's packet pair, after the last one closed (run() returned). The
  // engine's flows and relays stay; channel packets meanwhile were dropped and counted.
  void replace_channel(net::UniqueFd channel);
  // A new descriptor of the TUN device, after the last one's device was deleted (run()
  // returned kTunGone), framed as before (use_tun_format). Flows and relays stay: what the
  // servers send meanwhile is written into the new device.
  void replace_tun(net::UniqueFd tun);
  // A listening unix stream socket for quicstepctl's protocol: one request line per
  // connection (`status`), answered by `answer` and closed. A client that says nothing
  // within 200 ms is closed.
  using ControlAnswer = std::function<std::string(const std::string& request)>;
  void serve_control(net::UniqueFd listener, ControlAnswer answer);
  // A descriptor the frontend watches through this loop (a netlink socket for the network's
  // changes, the self-healing's announcements and timer): `on_readable` runs when it is
  // readable and must drain it. At most kMaxWatched; false when it could not be added.
  bool watch_descriptor(int fd, std::function<void()> on_readable);
  static constexpr std::size_t kMaxWatched = 8;
  // The device's network changed: every relay of a changed family is opened again on it
  // (EngineCore), after what every relay's socket already holds has been written into the
  // TUN. The old socket lingers (kLinger): a server that has not heard from the new address
  // yet still answers the old one, which may still be up (a phone's old network lingers
  // after the switch, a laptop's Wi-Fi stays beside new Ethernet). What it brings reaches the
  // application, whose answer leaves from the new socket, so the server moves, even when the
  // application had nothing else to say. It closes at the new socket's first datagram (the
  // server moved), at the relay's close, or after kLinger.
  void network_changed(ChangedFamilies changed = {});
  static constexpr std::chrono::seconds kLinger{30};
  // How the TUN frames packets (default: one bare IP packet per read and write). Before
  // run(); relays opened after it follow the relay_gro setting.
  // With UDP GSO every reply is written behind a virtio header carrying its partial
  // checksum (udp_gso_batch.hpp), so the engine leaves the payload's sum to the kernel.
  void use_tun_format(TunFormat format) {
    format_ = format;
    format_.udp_gso = format.udp_gso && format.vnet_header;
    engine_->set_reply_checksum(format_.udp_gso ? ReplyChecksum::partial
                                                : ReplyChecksum::complete);
  }
  const TunFormat& tun_format() const { return format_; }
  // A kernel fast path for confirmed flows (fast_path.hpp), owned by the frontend and
  // outliving the loop; nullptr (the default): every packet crosses the engine. Before run().
  void use_fast_path(FastPath* fast) { fast_ = fast; }
  FastPath* fast_path() const { return fast_; }
  int tun_descriptor() const { return tun_.get(); }  // the current one (replace_tun)
  std::size_t relays_lingering() const { return lingering_ids_.size(); }

  const EngineCore& engine() const { return *engine_; }
  const LoopCounters& counters() const { return counters_; }

  // EngineIo
  bool open_relay(RelayId id, const FlowKey& flow) override;
  void close_relay(RelayId id) override;
  void send_native(RelayId id, common::Bytes udp_payload) override;
  void send_channel(common::Bytes ip_packet) override;
  void write_tun(common::Bytes ip_packet) override;
  void relay_confirmed(RelayId id, bool confirmed) override;

 private:
  // Where an epoll event comes from: these, or kRelayBase + a relay id.
  enum Source : std::uint64_t {
    kTun = 1, kChannel, kTimer, kWake, kControl,
    kWatchedBase = 8,  // + the index of a watch_descriptor
    kRelayBase = kWatchedBase + kMaxWatched,
  };
  static constexpr std::uint64_t kLingerFlag = std::uint64_t{1} << 40;  // | a relay id
  bool watch(int fd, std::uint64_t source);
  std::string drain_tun(common::Timestamp now);
  std::string drain_tun_packets(common::Timestamp now);
  std::string drain_channel(common::Timestamp now);
  void drain_relay(RelayId id, common::Timestamp now);
  // Reads `fd` (relay `id`'s socket, or its lingering one) into the engine.
  void drain_relay_socket(int fd, RelayId id, common::Timestamp now);
  void end_lingering(RelayId id);
  void expire_lingering(common::Timestamp now);
  void arm_timer();
  void write_tun_now(common::Bytes ip_packet);  // one packet, framed as the TUN wants
  void flush_tun();                             // writes what the batch holds
  void send_native_now(RelayId id, common::Bytes udp_payload);
  void flush_native();                          // sends what the native batch holds
  void answer_control();
  // Installs relay `id`'s flow in the fast path once it is confirmed and its server has
  // answered the current socket; removes it when either stops being so.
  void update_fast_path(RelayId id);

  std::unique_ptr<EngineCore> engine_;
  net::UniqueFd tun_;
  net::UniqueFd channel_;
  Protector& protector_;
  net::UniqueFd epoll_;
  net::UniqueFd timer_;
  net::UniqueFd wake_;
  net::UniqueFd control_;
  ControlAnswer control_answer_;
  std::vector<std::function<void()>> watched_;  // by watch_descriptor's order
  std::vector<int> relay_fds_;  // by relay id; -1 when closed
  FastPath* fast_ = nullptr;
  struct FastState {
    FlowKey flow;            // the flow the relay's socket was opened for
    bool confirmed = false;  // relay_confirmed(id, true), not taken back
    bool answered = false;   // the server has sent to the current socket
    bool installed = false;
  };
  std::vector<FastState> fast_state_;  // by relay id (empty without a fast path)
  // A relay's socket on the network before the last change, by relay id (fd -1: none).
  struct Lingering {
    int fd = -1;
    common::Timestamp until;
  };
  std::vector<Lingering> lingering_;
  std::vector<RelayId> lingering_ids_;  // the ids with one (a change's worth at the most)
  bool keep_closed_relays_ = false;     // inside network_changed: close_relay lets it linger
  std::vector<std::uint8_t> buffer_;
  TunFormat format_;
  UdpGsoBatch batch_;
  bool batching_ = false;                 // inside a relay drain, with udp_gso
  // A run of one relay's datagrams of one size (the last may be shorter), gathered while
  // the TUN is drained, sent as one UDP_SEGMENT send.
  struct NativeBatch {
    RelayId id = 0;
    std::size_t segment = 0;   // the first datagram's size
    std::size_t count = 0;
    bool closed = false;       // a shorter datagram ended it
    std::vector<std::uint8_t> bytes;
  } native_;
  bool batching_native_ = false;          // inside a TUN drain, with relay_gso
  std::vector<std::uint8_t> segment_buffer_;  // a batch rewritten packet by packet
  common::Timestamp armed_ = common::Timestamp::never();
  std::atomic<bool> stopping_{false};
  LoopCounters counters_;
};

}  // namespace quicstep::client::tun
