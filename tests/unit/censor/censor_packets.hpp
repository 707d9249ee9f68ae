// Packets for the censor's tests: built QUIC Initials carrying a ClientHello (protected
// with keys from their DCID, as a real client's), TLS-over-TCP ClientHellos, DNS queries,
// all wrapped by PacketBuilder; and the captures of tests/data read as IP datagrams.
#pragma once

#include <pcap/pcap.h>

#include <string>
#include <vector>

#include "common/dns_message.hpp"
#include "common/initial_protection.hpp"
#include "common/link_layer.hpp"
#include "common/timestamp.hpp"
#include "support/packet_builder.hpp"

namespace quicstep::censor::testing {

using quicstep::test::ByteVec;
using quicstep::test::PacketBuilder;

inline constexpr const char* kClient4 = "198.18.1.2";
inline constexpr const char* kServer4 = "198.18.10.11";
inline constexpr const char* kClient6 = "2001:db8:1::2";
inline constexpr const char* kServer6 = "2001:db8:10::11";
inline constexpr const char* kDns4 = "198.18.4.53";

inline common::Timestamp at_s(double s) { return {static_cast<std::int64_t>(s * 1e9)}; }

// A ClientHello for `sni` (client_hello_builder.hpp, defined in censor_packets_test.cpp:
// that header and packet_builder.hpp cannot share a translation unit).
ByteVec client_hello(const std::string& sni, const std::string& alpn);
// A QUIC CRYPTO frame at offset 0; TLS handshake records of at most 16 KB.
ByteVec crypto_frame(const ByteVec& data);
ByteVec tls_records(const ByteVec& handshake);

// A client Initial (v1) whose CRYPTO frame carries a whole ClientHello for `sni`, padded to
// 1200 bytes, as UDP from the client to the server (IPv4 or IPv6).
inline ByteVec quic_initial(const std::string& sni, std::uint16_t cport, bool v6 = false,
                            std::uint8_t dcid_seed = 0x11) {
  ByteVec frames = crypto_frame(client_hello(sni, "h3"));
  frames.resize(1100, 0);  // PADDING
  const ByteVec dcid(8, dcid_seed);
  auto keys = common::derive_initial_keys(1, dcid, common::Perspective::client);
  common::InitialPacketSpec spec;
  spec.dcid = dcid;
  spec.payload = frames;
  auto packet = common::protect_initial(spec, *keys);
  PacketBuilder b;
  if (v6) {
    b.ipv6(kClient6, kServer6);
  } else {
    b.ipv4(kClient4, kServer4);
  }
  return b.udp(cport, 443).payload(*packet).build();
}

// A short-header QUIC packet (first byte 0x41) between client and server port 443.
inline ByteVec quic_short(std::uint16_t cport, bool from_client = true, std::size_t size = 60) {
  ByteVec payload(size, 0x5a);
  payload[0] = 0x41;
  PacketBuilder b;
  if (from_client) {
    b.ipv4(kClient4, kServer4).udp(cport, 443);
  } else {
    b.ipv4(kServer4, kClient4).udp(443, cport);
  }
  return b.payload(payload).build();
}

// TCP segments of a connection to server:443 (client seq starts at 1000, server's at 5000).
inline ByteVec tcp_syn(std::uint16_t cport) {
  return PacketBuilder().ipv4(kClient4, kServer4).tcp(cport, 443).seq(999).flags(test::tcp::kSyn).build();
}
inline ByteVec tcp_hello(const std::string& sni, std::uint16_t cport) {
  const auto records = tls_records(client_hello(sni, "h2"));
  return PacketBuilder().ipv4(kClient4, kServer4).tcp(cport, 443).seq(1000).ack(5000)
      .flags(test::tcp::kAck | test::tcp::kPsh).payload(records).build();
}

inline ByteVec dns_query(const std::string& name, std::uint16_t qtype, std::uint16_t id = 0x1234) {
  common::ByteWriter w;
  (void)common::encode_dns_message(w, common::make_dns_query(id, name, qtype));
  return PacketBuilder().ipv4(kClient4, kDns4).udp(40053, 53).payload(w.take()).build();
}

struct Frame {
  common::Timestamp time;
  ByteVec ip;
};

// The IP datagrams of a capture in tests/data (see its README).
inline std::vector<Frame> read_capture(const std::string& name) {
  const std::string path = std::string(QS_TEST_DATA_DIR) + "/" + name;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
  std::vector<Frame> frames;
  if (p == nullptr) return frames;
  const auto link = static_cast<common::LinkType>(pcap_datalink(p));
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  while (pcap_next_ex(p, &h, &data) == 1) {
    auto ip = common::ip_datagram_of_frame(link, common::Bytes(data, h->caplen));
    if (!ip) continue;
    frames.push_back({common::Timestamp{h->ts.tv_sec * 1'000'000'000LL + h->ts.tv_usec * 1000LL},
                      ByteVec(ip->begin(), ip->end())});
  }
  pcap_close(p);
  return frames;
}

}  // namespace quicstep::censor::testing
