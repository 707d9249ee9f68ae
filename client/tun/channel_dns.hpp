// ChannelDns: the TUN engine's half of "DNS through the channel" (client/README.md): every
// DNS query the engine sends into the channel goes to the channel's resolver (the wg-quick
// file's DNS line: the resolver a full VPN would set), and its answer comes back from the
// address the application asked. The host's resolver (a router's, an ISP's) is out of reach
// from the provider's side or lies for blocked names; on Android the VPN's DNS servers are
// the channel's resolver already, and this catches the applications that ask another.
//
//   to the channel    a UDP or TCP packet to port 53, not fragmented, to another address
//                     of a family that has a channel resolver: its destination becomes the
//                     resolver, the address it had is kept by (family, client port)
//   from the channel  a packet from the resolver's port 53 to a client port with a kept
//                     address: its source becomes that address again; a first fragment
//                     keeps it for the later fragments (by the IPv4 identification, or an
//                     IPv6 fragment header's right after the fixed header), which get it too
//
// A query into the channel whose source is not the tunnel's address (a socket that named the
// native interface, IP_UNICAST_IF as systemd-resolved's or SO_BINDTODEVICE, which the
// frontend's rules routed again into the TUN) would be refused by the provider: it leaves
// from the tunnel's address, its own source is kept with its port's entry, and its answer is
// written back to that source. Also in a family without a channel resolver.
//
// Checksums (IPv4 header, UDP/TCP) are adjusted incrementally (RFC 1624); an IPv4 UDP
// checksum of 0 (none) stays 0. Every query refreshes its port's entry, also one sent to the
// resolver itself, so an old entry never renames a later answer. Sans-IO, rewrites in place;
// bounded (invariant 4): both tables are allocated by the constructor, least recently used
// entries give way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "common/ip_packet.hpp"
#include "common/lru_table.hpp"

namespace quicstep::client::tun {

// The tunnel's addresses (the TUN's): queries from another source leave from these.
struct TunnelAddresses {
  std::optional<common::IpAddress> v4, v6;
};

class ChannelDns {
 public:
  // A family without a resolver keeps its queries' destinations; one without a tunnel
  // address their sources. Capacity: client ports remembered (and as many fragment
  // identifications), 1..2^20.
  ChannelDns(std::optional<common::IpAddress> v4, std::optional<common::IpAddress> v6,
             std::size_t capacity = 4096, std::uint64_t seed = 0, TunnelAddresses tunnel = {});

  bool enabled() const { return v4_.has_value() || v6_.has_value(); }
  const std::optional<common::IpAddress>& v4() const { return v4_; }
  const std::optional<common::IpAddress>& v6() const { return v6_; }

  // Cheap looks at a packet's first bytes, for the caller to copy only the packets that may
  // be rewritten: one to port 53 of a family with a resolver or a tunnel address (to the
  // channel); one from a resolver, or from port 53 or a fragment in a family with a tunnel
  // address (from the channel).
  bool may_rewrite_to_channel(common::Bytes packet) const;
  bool may_rewrite_from_channel(common::Bytes packet) const;
  // A packet about to enter the channel. True when it was rewritten.
  bool to_channel(std::span<std::uint8_t> packet);
  // A packet that came out of the channel. True when it was rewritten.
  bool from_channel(std::span<std::uint8_t> packet);

  std::uint64_t redirected() const { return redirected_; }    // queries sent to the resolver
  std::uint64_t answered() const { return answered_; }        // answers renamed back
  std::uint64_t unmatched() const { return unmatched_; }      // from the resolver, no entry
  // Queries from another source than the tunnel's, sent from the tunnel's address, and
  // their answers written back to that source.
  std::uint64_t sources_renamed() const { return sources_renamed_; }
  std::uint64_t answers_to_source() const { return answers_to_source_; }

 private:
  // What a client port's last query into the channel had: the address it asked (when the
  // resolver took its place) and its own source (when the tunnel's took its place). A
  // fragment's entry also has the answer's source as it came (`from`): a later fragment
  // of another sender with the same identification is not its.
  struct Kept {
    std::optional<common::IpAddress> asked, source, from;
  };
  struct Hash {
    std::uint64_t seed;
    std::uint64_t operator()(std::uint64_t key) const {
      return (key ^ seed) * 0x9e3779b97f4a7c15ull;
    }
  };
  using Table = common::LruTable<std::uint64_t, Kept, Hash>;
  const std::optional<common::IpAddress>& resolver(common::IpFamily f) const {
    return f == common::IpFamily::v4 ? v4_ : v6_;
  }
  const std::optional<common::IpAddress>& tunnel(common::IpFamily f) const {
    return f == common::IpFamily::v4 ? tunnel_.v4 : tunnel_.v6;
  }
  static void remember(Table& table, std::uint64_t key, const Kept& kept);
  // Gives an answer (or a later fragment of one) the address asked and the query's source.
  bool rename_answer(std::span<std::uint8_t> p, const common::IpPacket& ip, const Kept& kept,
                     std::optional<std::size_t> l4_check);

  std::optional<common::IpAddress> v4_, v6_;
  TunnelAddresses tunnel_;
  Table ports_;      // IPv6 << 16 | client port -> what its last query had
  Table fragments_;  // IPv6 << 32 | identification -> as its first fragment's port
  std::uint64_t redirected_ = 0, answered_ = 0, unmatched_ = 0;
  std::uint64_t sources_renamed_ = 0, answers_to_source_ = 0;
};

}  // namespace quicstep::client::tun
