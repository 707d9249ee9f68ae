// NfqueueFrontend: one netfilter queue, on libmnl + libnetfilter_queue's nfq_nlmsg_* API.
// Owns its netlink socket (RAII: closing it unbinds the queue; the kernel then applies the
// rule's --queue-bypass, i.e. the pre-set channel mark).
//
// Configuration: copy whole packets; NFQA_CFG_F_FAIL_OPEN (a full kernel queue accepts new
// packets with their pre-set mark — the channel — instead of dropping them); a kernel queue
// length; SO_RCVBUFFORCE for bursts; NETLINK_NO_ENOBUFS is NOT set: overruns are reported,
// counted and survived. GSO: the outbound queue does not set NFQA_CFG_F_GSO, so the kernel
// segments GSO super-packets and each segment (each its own QUIC datagram, maybe a long
// header) gets its own decision; the inbound (watch) queue sets it (only observed).
//
// Verdicts are collected while a burst is read and sent in one sendmsg: runs of "accept
// unchanged" (the pre-set mark) as one NFQNL_MSG_VERDICT_BATCH, a changed mark (native) as
// an individual verdict, never batched: a batch also releases packets whose queue message
// was lost to ENOBUFS, and those must keep their channel mark.
//
// A verdict may have to wait (the native switch: PacketVerdict::not_before): the packet
// stays in the kernel queue, its verdict in a VerdictDeferral, and no batch verdict reaches
// it meanwhile; due ones are sent, in order, before any later verdict. ENOBUFS releases
// waiting packets unchanged (the channel) with the lost ones.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/error.hpp"
#include "common/timestamp.hpp"
#include "net/verdict_deferral.hpp"
#include "net/verdict_plan.hpp"

struct mnl_socket;

namespace quicstep::net {

struct QueuedPacket {
  std::uint32_t id = 0;
  common::Bytes payload;  // the IP packet
  std::uint32_t mark = 0;
  std::uint32_t indev = 0;  // the input interface's index (0: none, an outbound packet)
  bool truncated = false;  // the copy is shorter than the packet (should not happen)
};

struct NfqueueStats {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t enobufs = 0;        // receive overruns: queue messages lost
  std::uint64_t bad_messages = 0;   // unparseable netlink messages
  std::uint64_t verdict_errors = 0; // sendmsg failures, error acks
  std::uint64_t batches = 0;        // verdict messages sent as batches
  std::uint64_t deferred = 0;       // verdicts that waited (Decision::not_before)
  std::uint64_t defer_refused = 0;  // the deferral was full: sent at once
  std::uint64_t defer_abandoned = 0;  // released unchanged (the channel) after ENOBUFS
};

struct NfqueueOptions {
  std::uint16_t queue = 0;
  bool gso = false;
  int rcvbuf = 8 << 20;            // bytes (SO_RCVBUFFORCE; SO_RCVBUF if not permitted)
  std::uint32_t max_len = 4096;    // kernel queue length
  std::size_t max_deferred = 1024; // verdicts waiting at most (VerdictDeferral)
};

// What to do with one packet: a new mark (nullopt: accept unchanged), not before a time.
struct PacketVerdict {
  std::optional<std::uint32_t> mark;
  common::Timestamp not_before{};
  PacketVerdict(std::optional<std::uint32_t> m = std::nullopt, common::Timestamp t = {})  // NOLINT
      : mark(m), not_before(t) {}
};

class NfqueueFrontend {
 public:
  // The verdict for a packet: its new mark, or nullopt to accept it unchanged, and the
  // time before which it must not be released.
  using Decide = std::function<PacketVerdict(const QueuedPacket&)>;

  NfqueueFrontend() = default;
  NfqueueFrontend(const NfqueueFrontend&) = delete;
  NfqueueFrontend& operator=(const NfqueueFrontend&) = delete;
  ~NfqueueFrontend();

  // Opens, binds and configures the queue; the socket is non-blocking. Failures: socket/bind
  // failures, the kernel refusing the config (EPERM without CAP_NET_ADMIN; EBUSY when another
  // process holds the queue).
  common::Outcome open(const NfqueueOptions& options);
  int fd() const;
  bool is_open() const { return nl_ != nullptr; }

  // Reads what is waiting (at most max_datagrams), decides each packet, sends the
  // verdicts. A verdict whose not_before is after `now` waits (deferred) until a later
  // drain() or release_due() at or after that time; every due deferred verdict is sent
  // before the burst's own. Never throws; errors are counted in stats().
  void drain(const Decide& decide, common::Timestamp now, int max_datagrams = 256);
  // Sends the deferred verdicts that are due at `now`.
  void release_due(common::Timestamp now);
  // When the next deferred verdict is due (Timestamp max: none).
  common::Timestamp next_release() const { return deferral_.next_release(); }
  std::size_t deferred_now() const { return deferral_.size(); }

  const NfqueueStats& stats() const { return stats_; }

 private:
  common::Outcome configure(const NfqueueOptions& options);
  void handle_message(const void* nlh, const Decide& decide, common::Timestamp now);
  void flush();

  mnl_socket* nl_ = nullptr;
  std::uint32_t portid_ = 0;
  std::uint16_t queue_ = 0;
  bool lost_ = false;  // ENOBUFS seen: release lost ids before the next verdict
  std::vector<char> rx_;
  std::vector<char> tx_;
  std::vector<PendingVerdict> pending_;
  VerdictDeferral deferral_{1024};
  std::vector<VerdictMessage> plan_;
  NfqueueStats stats_;
};

}  // namespace quicstep::net
