// HandshakeObserver: what an on-path observer — a censor — learns from a stream of IP
// packets: QUIC header fields, Initial packets decrypted with keys anyone can derive, the
// ClientHello reassembled across Initial datagrams (QUIC) or TCP segments and TLS records,
// its SNI and ALPN, and DNS question names. Sans-IO: packets and their time are passed in.
//
// quicstep-inspect prints what this returns; the lab's censor and the leak checks build on
// it. Flow state is bounded (max_flows, LRU eviction, idle expiry): the flow table
// (LruTable) is allocated by the constructor, each flow's handshake state when it starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns_message.hpp"
#include "common/fixed_list.hpp"
#include "common/flow_key.hpp"
#include "common/ip_packet.hpp"
#include "common/lru_table.hpp"
#include "common/quic_header.hpp"
#include "common/timestamp.hpp"

namespace quicstep::common {

struct HandshakeObserverConfig {
  // Flows tracked at once; the least recently seen is forgotten when a new one needs room.
  std::size_t max_flows = 65536;
  // A flow not seen for this long is forgotten.
  Duration flow_idle_timeout = std::chrono::seconds(120);
  // Bytes of CRYPTO stream (QUIC) or TCP payload (TLS) kept per flow while its ClientHello
  // is incomplete.
  std::size_t max_hello_bytes = 16 * 1024;
  // Read the ClientHello from a QUIC flow's first Initial datagram only, as the GFW was
  // measured to do; a ClientHello that spans two datagrams then yields no SNI.
  bool first_datagram_only = false;
};

// One QUIC packet of a datagram, as seen on the wire (and after Initial decryption when the
// observer could derive the keys).
struct QuicPacketSeen {
  QuicPacketKind kind = QuicPacketKind::short_header;
  std::uint8_t first_byte = 0;
  bool fixed_bit = false;
  std::uint32_t version = 0;
  std::optional<LongPacketType> type;
  Bytes dcid;  // views into the observed datagram
  Bytes scid;
  std::size_t token_length = 0;
  std::size_t length = 0;  // bytes of this packet in the datagram
  bool from_client = true;
  std::optional<std::uint64_t> packet_number;  // set when decrypted
  std::optional<Error> decrypt_error;          // set when decryption was tried and failed
  std::size_t crypto_bytes = 0;                // CRYPTO frame data bytes in this packet
};

inline constexpr std::size_t kMaxQuicPacketsPerDatagram = 8;

// A ClientHello once complete: reported on the packet that completed it.
struct ClientHelloSeen {
  std::string server_name;  // empty when the ClientHello has no SNI
  std::vector<std::string> alpn;
  std::vector<std::uint16_t> supported_versions;
  std::vector<std::uint16_t> key_share_groups;
  bool has_ech = false;
  std::size_t length = 0;    // bytes of the ClientHello message
  std::size_t packets = 0;   // datagrams (QUIC) or segments (TCP) that carried its bytes
};

struct Observation {
  std::optional<IpPacket> ip;  // nullopt when the datagram did not parse (see ip_error)
  std::optional<Error> ip_error;
  bool from_client = true;  // direction within its flow (the first packet's sender is client)

  FixedList<QuicPacketSeen, kMaxQuicPacketsPerDatagram> quic;
  std::optional<Error> quic_error;  // the coalesced walk stopped on this error

  std::optional<ClientHelloSeen> client_hello;
  std::optional<Error> client_hello_error;  // the flow's ClientHello could not be read

  std::optional<DnsMessage> dns;
  std::optional<Error> dns_error;
};

struct HandshakeObserverCounters {
  std::uint64_t packets = 0;
  std::uint64_t ip_errors = 0;
  std::uint64_t quic_initials_decrypted = 0;
  std::uint64_t quic_decrypt_failures = 0;
  std::uint64_t client_hellos = 0;
  std::uint64_t client_hello_errors = 0;
  std::uint64_t dns_messages = 0;
  std::uint64_t flows_evicted = 0;
  std::uint64_t flows_expired = 0;
};

class HandshakeObserver {
 public:
  explicit HandshakeObserver(HandshakeObserverConfig config = {});
  ~HandshakeObserver();
  HandshakeObserver(const HandshakeObserver&) = delete;
  HandshakeObserver& operator=(const HandshakeObserver&) = delete;

  // Observes one IP datagram (IPv4 or IPv6, from its first header byte) seen at `now`.
  // Views in the result point into `datagram` and are valid while it is. Never fails:
  // what could not be parsed is reported in the Observation's *_error fields.
  Observation observe(Bytes datagram, Timestamp now);

  std::size_t flow_count() const;
  const HandshakeObserverCounters& counters() const { return counters_; }

 private:
  struct Flow;
  using FlowTable = LruTable<FlowKey, std::unique_ptr<Flow>, FlowKeyHash>;

  Flow& flow_for(const IpPacket& packet, Timestamp now, bool& from_client);
  void expire(Timestamp now);
  void forget_oldest();  // precondition: flows_ not empty
  void observe_quic(const IpPacket& packet, Flow& flow, bool from_client, Observation& out);
  // Decrypts one Initial into `seen`; returns whether it added client CRYPTO data.
  bool decrypt_and_collect(const QuicHeader& header, Flow& flow, bool from_client, QuicPacketSeen& seen);
  void finish_quic_hello(Flow& flow, Observation& out);
  void observe_tcp(const IpPacket& packet, Flow& flow, bool from_client, Observation& out);
  void observe_dns(const IpPacket& packet, Observation& out);

  HandshakeObserverConfig config_;
  HandshakeObserverCounters counters_;
  FlowTable flows_;  // least recently seen evicted first
  std::vector<std::uint8_t> scratch_;  // decryption buffer
};

}  // namespace quicstep::common
