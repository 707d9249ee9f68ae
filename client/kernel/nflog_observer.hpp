// NflogObserver: one nfnetlink_log group, read on libmnl + libnetfilter_log's nflog_nlmsg_*
// API. The routed native path (client/README.md) sees the packets it decides from here:
// `log group` rules in the channel device's netdev chains copy what crosses the WireGuard
// interface (outbound QUIC before the source rewrite, the server's long headers after the
// destination rewrite). A copy, not a queue: the packet goes on through the channel whatever
// the daemon does, so nothing waits for it and nothing leaks when it is dead.
//
// Configuration: whole packets (copy range 0xffff), a queue threshold of one (the kernel
// would otherwise gather up to 100 packets, or a second, before sending), a large receive
// buffer; ENOBUFS (copies lost) is counted and survived: a lost copy delays a decision, the
// flow's next packet is seen.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

struct mnl_socket;

namespace quicstep::client::kernel {

struct ObservedPacket {
  common::Bytes payload;     // the IP packet
  std::uint32_t indev = 0;   // set for packets logged on ingress
  std::uint32_t outdev = 0;  // set for packets logged on egress
  // The rule's log prefix, when it has one (nft_rules.hpp: kLogPrefixOut, kLogPrefixIn);
  // empty otherwise. Valid while the packet's payload is.
  std::string_view prefix;
};

struct NflogStats {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t enobufs = 0;       // receive overruns: copies lost
  std::uint64_t bad_messages = 0;  // unparseable netlink messages, or no payload
};

class NflogObserver {
 public:
  using Observe = std::function<void(const ObservedPacket&)>;

  NflogObserver() = default;
  NflogObserver(const NflogObserver&) = delete;
  NflogObserver& operator=(const NflogObserver&) = delete;
  ~NflogObserver();

  // Binds the group (non-blocking socket). Failures: socket/bind failures, the kernel refusing
  // (EPERM without CAP_NET_ADMIN; EBUSY when another socket holds the group).
  common::Outcome open(std::uint16_t group, int rcvbuf = 4 << 20);
  int fd() const;
  bool is_open() const { return nl_ != nullptr; }
  // Unbinds the group (the daemon's fallback from the routed path); open() may follow.
  void close();

  // Reads what is waiting (at most max_datagrams netlink datagrams), calls `observe` per
  // packet. Never throws; errors are counted.
  void drain(const Observe& observe, int max_datagrams = 256);

  const NflogStats& stats() const { return stats_; }

 private:
  common::Outcome configure(std::uint16_t group);

  mnl_socket* nl_ = nullptr;
  std::vector<char> rx_;
  NflogStats stats_;
};

}  // namespace quicstep::client::kernel
