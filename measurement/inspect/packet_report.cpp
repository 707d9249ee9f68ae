#include "measurement/inspect/packet_report.hpp"

#include <cstdio>

#include "common/quic_version.hpp"

namespace quicstep::inspect {
namespace {

using nlohmann::json;

std::string hex32(std::uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string protocol_name(std::uint8_t protocol) {
  switch (protocol) {
    case common::kIpProtoUdp: return "udp";
    case common::kIpProtoTcp: return "tcp";
    case 1: return "icmp";
    case 58: return "icmpv6";
    default: return std::to_string(protocol);
  }
}

json quic_packet(const common::QuicPacketSeen& q) {
  json j;
  j["form"] = q.kind == common::QuicPacketKind::short_header ? "short" : "long";
  j["kind"] = std::string(common::to_string(q.kind));
  j["fixed_bit"] = q.fixed_bit ? 1 : 0;
  if (q.kind != common::QuicPacketKind::short_header) {
    j["version"] = hex32(q.version);
    if (q.type) j["type"] = std::string(common::to_string(*q.type));
    j["scid"] = to_hex(q.scid);
  }
  j["dcid"] = to_hex(q.dcid);
  if (q.type == common::LongPacketType::initial || q.type == common::LongPacketType::retry) {
    j["token_len"] = q.token_length;
  }
  j["length"] = q.length;
  if (q.packet_number) j["pn"] = *q.packet_number;
  if (q.decrypt_error) j["decrypt_error"] = std::string(common::to_string(*q.decrypt_error));
  if (q.crypto_bytes) j["crypto_bytes"] = q.crypto_bytes;
  return j;
}

json client_hello(const common::ClientHelloSeen& hello) {
  json j;
  j["sni"] = hello.server_name;
  j["alpn"] = hello.alpn;
  json versions = json::array();
  for (auto v : hello.supported_versions) versions.push_back(hex32(v).substr(6));
  j["supported_versions"] = versions;
  j["key_share_groups"] = hello.key_share_groups;
  j["ech"] = hello.has_ech;
  j["length"] = hello.length;
  j["packets"] = hello.packets;
  return j;
}

json dns_message(const common::DnsMessage& dns) {
  json j;
  j["id"] = dns.header.id;
  j["response"] = dns.header.qr;
  j["rcode"] = dns.header.rcode;
  json questions = json::array();
  for (const auto& q : dns.questions) questions.push_back({{"name", q.name}, {"qtype", q.qtype}});
  j["questions"] = questions;
  return j;
}

}  // namespace

std::string to_hex(common::Bytes bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 0xf]);
  }
  return s;
}

json packet_report(std::uint64_t index, const CapturedFrame& frame, const common::Observation& seen) {
  json j;
  j["n"] = index;
  j["time"] = static_cast<double>(frame.time.ns) / 1e9;
  j["wire_len"] = frame.wire_length;
  if (!seen.ip) {
    j["error"] = std::string(common::to_string(*seen.ip_error));
    return j;
  }
  const auto& ip = *seen.ip;
  j["ip"] = ip.family == common::IpFamily::v4 ? 4 : 6;
  j["src"] = ip.src.to_string();
  j["dst"] = ip.dst.to_string();
  j["proto"] = protocol_name(ip.protocol);
  if (ip.udp || ip.tcp) {
    j["sport"] = ip.src_port;
    j["dport"] = ip.dst_port;
    j["payload_len"] = ip.payload.size();
    j["dir"] = seen.from_client ? "client" : "server";
  }
  if (ip.tcp) {
    std::string flags;
    if (ip.tcp->syn()) flags += 'S';
    if (ip.tcp->ack_flag()) flags += 'A';
    if (ip.tcp->fin()) flags += 'F';
    if (ip.tcp->rst()) flags += 'R';
    if (ip.tcp->psh()) flags += 'P';
    j["tcp_flags"] = flags;
  }
  if (ip.is_fragment) j["fragment"] = true;
  if (!seen.quic.empty()) {
    json packets = json::array();
    for (const auto& q : seen.quic) packets.push_back(quic_packet(q));
    j["quic"] = packets;
  }
  if (seen.quic_error) j["quic_error"] = std::string(common::to_string(*seen.quic_error));
  if (seen.client_hello) j["tls"] = client_hello(*seen.client_hello);
  if (seen.client_hello_error) j["tls_error"] = std::string(common::to_string(*seen.client_hello_error));
  if (seen.dns) j["dns"] = dns_message(*seen.dns);
  if (seen.dns_error) j["dns_error"] = std::string(common::to_string(*seen.dns_error));
  return j;
}

}  // namespace quicstep::inspect
