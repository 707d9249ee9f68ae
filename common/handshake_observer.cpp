#include "common/handshake_observer.hpp"

#include <algorithm>

#include "common/crypto_reassembly.hpp"
#include "common/initial_protection.hpp"
#include "common/quic_frames.hpp"
#include "common/tls_client_hello.hpp"
#include "common/tls_record_stream.hpp"

namespace quicstep::common {
namespace {

constexpr std::uint16_t kDnsPort = 53;
constexpr std::uint16_t kHttpsPort = 443;
constexpr std::size_t kMaxDatagram = 65536;

bool is_service_port(std::uint16_t port) { return port == kHttpsPort || port == kDnsPort; }

ClientHelloSeen summarize(const ClientHello& hello, std::size_t packets) {
  ClientHelloSeen seen;
  seen.server_name = std::string(hello.server_name());
  for (Bytes p : hello.alpn) seen.alpn.emplace_back(p.begin(), p.end());
  seen.supported_versions.assign(hello.supported_versions.begin(), hello.supported_versions.end());
  for (const auto& share : hello.key_shares) seen.key_share_groups.push_back(share.group);
  seen.has_ech = hello.has_ech;
  seen.length = hello.message_length;
  seen.packets = packets;
  return seen;
}

}  // namespace

struct HandshakeObserver::Flow {
  FlowKey key;
  Timestamp last_seen;
  bool is_quic = false;

  // QUIC: keys from the DCID of the client's first Initial (or of the Initial after a Retry).
  std::vector<std::uint8_t> keys_dcid;
  std::optional<InitialKeys> client_keys;
  std::optional<InitialKeys> server_keys;
  std::optional<std::uint64_t> largest_client_pn;
  std::optional<std::uint64_t> largest_server_pn;
  std::size_t client_cid_length = 0;  // DCID length of server→client short headers
  std::size_t server_cid_length = 0;  // DCID length of client→server short headers
  std::size_t client_initial_datagrams = 0;
  std::unique_ptr<CryptoReassembler> crypto;

  // TCP
  std::optional<std::uint32_t> first_data_seq;
  std::unique_ptr<TlsRecordStream> tls;

  std::size_t hello_packets = 0;
  bool hello_done = false;  // reported, or given up on
};

HandshakeObserver::HandshakeObserver(HandshakeObserverConfig config)
    : config_(config),
      flows_(std::max<std::size_t>(config.max_flows, 1), FlowKeyHash{}),
      scratch_(kMaxDatagram) {}

HandshakeObserver::~HandshakeObserver() = default;

std::size_t HandshakeObserver::flow_count() const { return flows_.size(); }

void HandshakeObserver::forget_oldest() {
  const FlowTable::Handle h = flows_.oldest();
  flows_.value(h).reset();  // its handshake state goes now, not when the slot is reused
  flows_.erase(h);
}

void HandshakeObserver::expire(Timestamp now) {
  while (!flows_.empty() &&
         now - flows_.value(flows_.oldest())->last_seen > config_.flow_idle_timeout) {
    forget_oldest();
    ++counters_.flows_expired;
  }
}

HandshakeObserver::Flow& HandshakeObserver::flow_for(const IpPacket& packet, Timestamp now,
                                                     bool& from_client) {
  FlowKey key = FlowKey::from_client(packet);
  auto h = flows_.find(key);
  from_client = true;
  if (h == FlowTable::npos) {
    h = flows_.find(FlowKey::from_server(packet));
    from_client = false;
  }
  if (h != FlowTable::npos) {
    flows_.touch(h);  // most recently seen
    Flow& flow = *flows_.value(h);
    flow.last_seen = now;
    return flow;
  }
  // A new flow: its first sender is the client, unless it answers from a service port
  // (a capture that starts mid-connection, or a SYN-ACK seen first).
  const bool syn_ack = packet.tcp && packet.tcp->syn() && packet.tcp->ack_flag();
  from_client = !(syn_ack || (is_service_port(packet.src_port) && !is_service_port(packet.dst_port)));
  if (!from_client) key = FlowKey::from_server(packet);
  if (flows_.full()) {
    forget_oldest();
    ++counters_.flows_evicted;
  }
  h = flows_.insert(key);
  flows_.value(h) = std::make_unique<Flow>();
  Flow& flow = *flows_.value(h);
  flow.key = key;
  flow.last_seen = now;
  return flow;
}

Observation HandshakeObserver::observe(Bytes datagram, Timestamp now) {
  ++counters_.packets;
  expire(now);
  Observation out;
  auto ip = parse_ip_packet(datagram);
  if (!ip) {
    ++counters_.ip_errors;
    out.ip_error = ip.error();
    return out;
  }
  out.ip = *ip;
  const IpPacket& packet = *out.ip;
  if (!packet.udp && !packet.tcp) return out;

  if (packet.src_port == kDnsPort || packet.dst_port == kDnsPort) {
    observe_dns(packet, out);
    return out;
  }
  bool from_client = true;
  Flow& flow = flow_for(packet, now, from_client);
  out.from_client = from_client;
  if (packet.udp) {
    observe_quic(packet, flow, from_client, out);
  } else {
    observe_tcp(packet, flow, from_client, out);
  }
  return out;
}

void HandshakeObserver::observe_dns(const IpPacket& packet, Observation& out) {
  Bytes message = packet.payload;
  if (packet.tcp) {
    if (message.empty()) return;
    auto frame = parse_dns_tcp_frame(message);
    if (!frame) {
      out.dns_error = frame.error();
      return;
    }
    message = frame->message;
  }
  auto dns = parse_dns_message(message);
  if (!dns) {
    out.dns_error = dns.error();
    return;
  }
  ++counters_.dns_messages;
  out.from_client = !dns->header.qr;  // the resolver's client asks, the server answers
  out.dns = std::move(*dns);
}

namespace {

// Whether a UDP datagram on a non-QUIC port looks like QUIC: a long header of a version
// this library knows (a Version Negotiation or an Initial of v1, v2, draft-29).
bool looks_like_quic(Bytes payload) {
  auto version = peek_quic_version(payload);
  return version && (*version == 0 || is_known_quic_version(*version));
}

}  // namespace

void HandshakeObserver::observe_quic(const IpPacket& packet, Flow& flow, bool from_client,
                                     Observation& out) {
  const Bytes payload = packet.payload;
  if (!flow.is_quic) {
    flow.is_quic = packet.src_port == kHttpsPort || packet.dst_port == kHttpsPort || looks_like_quic(payload);
    if (!flow.is_quic) return;
  }
  const std::size_t short_dcid = from_client ? flow.server_cid_length : flow.client_cid_length;
  CoalescedPackets packets(payload, short_dcid);
  bool carried_crypto = false;
  while (!packets.done()) {
    auto header = packets.next();
    if (!header) {
      out.quic_error = header.error();
      break;
    }
    QuicPacketSeen seen;
    seen.kind = header->kind;
    seen.first_byte = header->first_byte;
    seen.fixed_bit = header->fixed_bit;
    seen.version = header->version;
    seen.type = header->type;
    seen.dcid = header->dcid;
    seen.scid = header->scid;
    seen.token_length = header->token.size();
    seen.length = header->packet.size();
    seen.from_client = from_client;
    if (header->kind == QuicPacketKind::long_header &&
        (header->type == LongPacketType::initial || header->type == LongPacketType::handshake)) {
      // The peer's SCID is the DCID of the short headers it will receive.
      (from_client ? flow.client_cid_length : flow.server_cid_length) = header->scid.size();
    }
    if (header->kind == QuicPacketKind::long_header && header->type == LongPacketType::initial) {
      carried_crypto |= decrypt_and_collect(*header, flow, from_client, seen);
    }
    if (!out.quic.push_back(seen)) break;
  }
  if (from_client && carried_crypto) {
    ++flow.hello_packets;
    finish_quic_hello(flow, out);
  }
}

bool HandshakeObserver::decrypt_and_collect(const QuicHeader& header, Flow& flow, bool from_client,
                                            QuicPacketSeen& seen) {
  const Bytes dcid = header.dcid;
  if (from_client && !flow.client_keys) {
    flow.keys_dcid.assign(dcid.begin(), dcid.end());
    auto ck = derive_initial_keys(header.version, dcid, Perspective::client);
    auto sk = derive_initial_keys(header.version, dcid, Perspective::server);
    if (!ck || !sk) {
      seen.decrypt_error = ck ? sk.error() : ck.error();
      return false;
    }
    flow.client_keys = *ck;
    flow.server_keys = *sk;
  }
  const auto& keys = from_client ? flow.client_keys : flow.server_keys;
  if (!keys) {
    seen.decrypt_error = Error::not_found;  // the client's first Initial was not seen
    return false;
  }
  auto& largest = from_client ? flow.largest_client_pn : flow.largest_server_pn;
  auto plain = decrypt_initial(header, *keys, largest, scratch_);
  if (!plain && from_client && plain.error() == Error::decrypt_failed &&
      !std::equal(dcid.begin(), dcid.end(), flow.keys_dcid.begin(), flow.keys_dcid.end())) {
    // After a Retry the client starts over with keys from the Retry's SCID.
    auto ck = derive_initial_keys(header.version, dcid, Perspective::client);
    if (ck) {
      auto retried = decrypt_initial(header, *ck, std::nullopt, scratch_);
      if (retried) {
        flow.keys_dcid.assign(dcid.begin(), dcid.end());
        flow.client_keys = *ck;
        if (auto sk = derive_initial_keys(header.version, dcid, Perspective::server)) flow.server_keys = *sk;
        flow.largest_client_pn.reset();
        flow.largest_server_pn.reset();
        if (flow.crypto) flow.crypto->reset();
        flow.hello_packets = 0;
        flow.hello_done = false;
        plain = retried;
      }
    }
  }
  if (!plain) {
    ++counters_.quic_decrypt_failures;
    seen.decrypt_error = plain.error();
    return false;
  }
  ++counters_.quic_initials_decrypted;
  seen.packet_number = plain->packet_number;
  largest = std::max(largest.value_or(0), plain->packet_number);
  auto frames = parse_initial_frames(plain->payload);
  if (!frames) {
    seen.decrypt_error = frames.error();
    return false;
  }
  std::size_t crypto_bytes = 0;
  for (const auto& fragment : frames->crypto) crypto_bytes += fragment.data.size();
  seen.crypto_bytes = crypto_bytes;
  if (!from_client || flow.hello_done || crypto_bytes == 0) return false;
  if (config_.first_datagram_only && flow.client_initial_datagrams > 0) return false;
  if (!flow.crypto) flow.crypto = std::make_unique<CryptoReassembler>(config_.max_hello_bytes);
  for (const auto& fragment : frames->crypto) {
    if (auto added = flow.crypto->add(fragment.offset, fragment.data); !added) {
      flow.hello_done = true;
      ++counters_.client_hello_errors;
      return false;
    }
  }
  return true;
}

void HandshakeObserver::finish_quic_hello(Flow& flow, Observation& out) {
  ++flow.client_initial_datagrams;
  if (flow.hello_done || !flow.crypto) return;
  auto hello = parse_client_hello(flow.crypto->contiguous());
  if (hello) {
    out.client_hello = summarize(*hello, flow.hello_packets);
    ++counters_.client_hellos;
    flow.hello_done = true;
    flow.crypto.reset();  // the memory is not needed any more
    return;
  }
  if (hello.error() == Error::incomplete && !config_.first_datagram_only) return;
  out.client_hello_error = hello.error();
  ++counters_.client_hello_errors;
  flow.hello_done = true;
  flow.crypto.reset();
}

void HandshakeObserver::observe_tcp(const IpPacket& packet, Flow& flow, bool from_client,
                                    Observation& out) {
  const TcpView& tcp = *packet.tcp;
  if (!from_client || flow.hello_done) return;
  if (tcp.syn()) {
    flow.first_data_seq = tcp.seq + 1;
    return;
  }
  if (packet.payload.empty()) return;
  if (!flow.first_data_seq) flow.first_data_seq = tcp.seq;  // capture started mid-handshake
  if (!flow.tls) flow.tls = std::make_unique<TlsRecordStream>(config_.max_hello_bytes);
  ++flow.hello_packets;
  auto added = flow.tls->add_segment(tcp.seq - *flow.first_data_seq, packet.payload);
  if (!added) {
    out.client_hello_error = added.error();
    ++counters_.client_hello_errors;
    flow.hello_done = true;
    flow.tls.reset();
    return;
  }
  if (!flow.tls->complete()) return;
  auto hello = flow.tls->client_hello();
  if (hello) {
    out.client_hello = summarize(*hello, flow.hello_packets);
    ++counters_.client_hellos;
  } else {
    out.client_hello_error = hello.error();
    ++counters_.client_hello_errors;
  }
  flow.hello_done = true;
  flow.tls.reset();
}

}  // namespace quicstep::common
