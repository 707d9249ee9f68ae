// EngineCore: the TUN engine's decisions (docs/DESIGN.md "The TUN engine"), sans-IO. Every
// packet an application sends arrives from the TUN; the classifier (client/core) decides it
// exactly as it does for quicstepd, and the engine carries the decision out through an
// EngineIo that the frontend implements (Linux's quicstep-tun, Android's service, a fake in
// the tests):
//
//   from the TUN, decided channel  -> send_channel: the packet as it is, to the WireGuard
//                                     helper (the TUN's address is the tunnel address, so
//                                     an ordinary provider accepts it unchanged)
//   from the TUN, decided native   -> UDP: send_native on the flow's relay (opened on first
//                                     use), held until the end of the native switch
//                                     (held_packets.hpp); other protocols: the channel
//                                     (the engine has no raw sockets; counted)
//   from the TUN, decided drop     -> dropped, counted
//   from a relay (the server's     -> write_tun: an IP/UDP packet from the server to the
//   answer on the native path)        application's original address (reply_packet.hpp),
//                                     which the classifier sees as inbound_native (the
//                                     migration watchdog's answer)
//   from the channel               -> write_tun as it is; the classifier sees inbound_channel
//   (DNS either way: to and from the channel's resolver instead of the one asked,
//   channel_dns.hpp)
//
// What must hold (invariant 1): nothing leaves natively unless the classifier said native
// for it; a relay that cannot be opened, a full hold, an unknown relay all fail towards the
// channel or a drop, never towards the native path. Malformed packets from the TUN are
// decided by policy (the channel) and counted, never fatal. Bounded (invariant 4): relays,
// held packets and the classifier's tables are allocated by the constructor; the packet
// path never allocates. Time is passed in; next_expiry()/on_expiry() drive the timers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "client/core/classifier.hpp"
#include "client/core/policy.hpp"
#include "client/tun/channel_dns.hpp"
#include "client/tun/held_packets.hpp"
#include "client/tun/relay_table.hpp"
#include "client/tun/reply_packet.hpp"
#include "common/byte_reader.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::tun {

// What the engine asks of the world. Calls are made from inside EngineCore's methods; an
// implementation must not call back into the engine.
class EngineIo {
 public:
  virtual ~EngineIo() = default;
  // Open relay `id`: a UDP socket protected from the TUN (Android: VpnService.protect;
  // Linux: SO_MARK), connected to flow.server:flow.server_port. False when that failed
  // (the packet goes through the channel; the engine tries again on the flow's next packet).
  virtual bool open_relay(RelayId id, const FlowKey& flow) = 0;
  // Close relay `id`'s socket. Its id may be given to another flow afterwards.
  virtual void close_relay(RelayId id) = 0;
  // One UDP payload out of relay `id`. Errors (ENOBUFS, a lost network) are the
  // frontend's to count: QUIC recovers a lost datagram.
  virtual void send_native(RelayId id, common::Bytes udp_payload) = 0;
  // One IP packet to the WireGuard helper (never empty).
  virtual void send_channel(common::Bytes ip_packet) = 0;
  // One IP packet into the TUN, to the applications.
  virtual void write_tun(common::Bytes ip_packet) = 0;
  // The classifier confirmed relay `id`'s move (true: its server answers the relay), or
  // took the flow back to the channel (false). A frontend with a kernel fast path
  // (fast_path.hpp) may then let the flow's short headers bypass the engine, or stop.
  virtual void relay_confirmed(RelayId /*id*/, bool /*confirmed*/) {}
};

struct EngineConfig {
  core::Policy policy;  // the classifier's policy, as quicstepd's (quicstepd.toml's keys)
  // Relays open at once (protected UDP sockets, one per native flow).
  std::size_t relay_capacity = 4096;
  // A relay with no packet either way for this long is closed (the classifier forgets an
  // idle flow after policy.flows.idle_timeout, which closes its relay too).
  Duration relay_idle = std::chrono::seconds(120);
  // Native packets waiting for their flow's native switch, and the largest UDP payload one
  // may carry (larger ones go through the channel instead).
  std::size_t held_capacity = 512;
  std::size_t held_max_payload = 1500;
  // The channel's resolvers (channel_dns.hpp; the wg-quick file's DNS line): each family's
  // DNS queries into the channel go there. Unset: that family's keep their resolver.
  std::optional<common::IpAddress> channel_dns_v4, channel_dns_v6;
  // The tunnel's (the TUN's) addresses, the wg-quick file's Address: a DNS query into the
  // channel from another source leaves from these (channel_dns.hpp).
  std::optional<common::IpAddress> tunnel_v4, tunnel_v6;
};

struct TrafficCounters {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;  // IP packet bytes (native: the IP packet the TUN carried)
};

struct EngineCounters {
  TrafficCounters from_tun;         // every packet the applications sent
  TrafficCounters to_channel;       // sent to the WireGuard helper
  TrafficCounters to_native;        // sent on relays
  TrafficCounters from_channel;     // received from the helper, written into the TUN
  TrafficCounters from_native;      // received on relays, written into the TUN
  std::uint64_t malformed = 0;      // from the TUN, not an IP packet we can parse (channel)
  std::uint64_t dropped = 0;        // the policy said drop
  std::uint64_t held = 0;           // native packets that waited for the native switch
  std::uint64_t hold_refused = 0;   // could not wait (full, too large): sent to the channel
  std::uint64_t native_not_udp = 0; // native by policy but not UDP: sent to the channel
  std::uint64_t relays_opened = 0;
  std::uint64_t relays_closed = 0;  // idle, forgotten, or by network change
  std::uint64_t relays_evicted = 0; // to make room (relay_capacity)
  std::uint64_t relay_open_failed = 0;  // open_relay said no: the packet went to the channel
  std::uint64_t relay_unknown = 0;  // a datagram for a relay that is no longer open
  std::uint64_t reply_too_large = 0;  // a datagram that no IP packet can carry: dropped
  std::uint64_t network_changes = 0;
};

// Which address families' native path changed (its source appeared, went or moved).
struct ChangedFamilies {
  bool v4 = true;
  bool v6 = true;
};

class EngineCore {
 public:
  // Allocates every table. `seed` randomises the hash tables (random bits in a frontend,
  // 0 in tests). `io` must outlive the engine.
  EngineCore(const EngineConfig& config, EngineIo& io, std::uint64_t seed = 0);

  // One IP packet the TUN gave (an application sent it).
  void from_tun(common::Bytes ip_packet, Timestamp now);
  // One datagram that relay `id` received from its server.
  void from_relay(RelayId id, common::Bytes udp_payload, Timestamp now);
  // One IP packet the WireGuard helper gave (it came through the channel).
  void from_channel(common::Bytes ip_packet, Timestamp now);

  // The earliest time on_expiry() has work: a held packet's release, a watchdog deadline,
  // an idle flow or relay (Timestamp::never() when none). The frontend arms one timer.
  Timestamp next_expiry() const;
  void on_expiry(Timestamp now);

  // The device's network changed (Wi-Fi <-> cellular, a new default route): every relay of
  // a changed family has its socket closed and opened again on the new network, keeping
  // its id, so that its flow moves again (the server sees a new address and migrates). A
  // relay that cannot be opened again is closed; its flow's next packet tries anew or goes
  // to the channel. Relays of an unchanged family are left alone: re-binding one would give
  // it a new port, and the server's packets on their way to the old one would be refused
  // (a new uplink's IPv6 address comes a moment after its IPv4 one).
  void network_changed(Timestamp now, ChangedFamilies changed = {});

  // How reply packets carry their UDP checksum (reply_packet.hpp): complete (the default),
  // or partial where the frontend writes them into the TUN behind a virtio header that
  // tells the kernel so (EngineLoop with UDP GSO).
  void set_reply_checksum(ReplyChecksum checksum) { reply_checksum_ = checksum; }

  const core::Classifier& classifier() const { return *classifier_; }
  core::Classifier& classifier() { return *classifier_; }
  const RelayTable& relays() const { return relays_; }
  const HeldPackets& held() const { return held_; }
  const EngineCounters& counters() const { return counters_; }
  const ChannelDns& channel_dns() const { return dns_; }

 private:
  void native(common::Bytes ip_packet, const core::Decision& d, Timestamp now);
  RelayId open_relay(const FlowKey& flow, Timestamp now);
  void close_relay(RelayId id);  // not counted: the caller says why
  void send_native(RelayId id, common::Bytes payload, Timestamp now);
  void to_channel(common::Bytes ip_packet);
  void release_held(Timestamp now);
  void drain_events();

  EngineIo& io_;
  std::unique_ptr<core::Classifier> classifier_;
  RelayTable relays_;
  HeldPackets held_;
  EngineCounters counters_;
  std::array<core::FlowEvent, 64> events_{};
  std::unique_ptr<std::array<std::uint8_t, kMaxReplyPacket>> reply_;
  ChannelDns dns_;
  // A DNS packet rewritten on its way into or out of the channel (allocated once).
  std::unique_ptr<std::array<std::uint8_t, kMaxReplyPacket>> dns_packet_;
  ReplyChecksum reply_checksum_ = ReplyChecksum::complete;
};

}  // namespace quicstep::client::tun
