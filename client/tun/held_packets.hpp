// HeldPackets: the native packets that wait for the end of their flow's native switch
// (Decision::not_before, docs/DESIGN.md "The classifier"): a moved flow's first short
// headers must not reach the server before the client's Finished, which went the long way
// through the channel, or the server drops them as packets from an unknown address.
// The nfqueue daemon holds a verdict (net/verdict_deferral.hpp); the TUN engine has read
// the packet already, so it keeps a copy of its UDP payload here until it may leave.
//
// Sans-IO and bounded (invariant 4): the constructor allocates every slot. Packets of one
// flow share one release time, so releasing every due packet in arrival order keeps each
// flow's order. A full store, or a payload larger than a slot, is refused: the caller sends
// the packet through the channel instead (never towards the censor, and never reordered
// ahead of the held ones on the native path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "client/tun/relay_table.hpp"
#include "common/byte_reader.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::tun {

class HeldPackets {
 public:
  // Precondition: capacity >= 1, max_payload >= 1.
  HeldPackets(std::size_t capacity, std::size_t max_payload);

  // Keeps a copy of `payload` for `relay` until `release`. False (nothing kept) when full or
  // when the payload is larger than a slot.
  bool hold(RelayId relay, common::Bytes payload, Timestamp release);

  // Calls send(RelayId, Bytes) for every packet whose release time is <= now, in arrival
  // order, and forgets them. The bytes are valid during the call only.
  template <typename Send>
  void release_due(Timestamp now, Send&& send) {
    if (entries_.empty() || now < next_release_) return;
    std::size_t kept = 0;
    Timestamp next = Timestamp::never();
    for (const Entry& e : entries_) {
      if (e.release <= now) {
        send(e.relay, common::Bytes(slot(e.slot), e.length));
        free_.push_back(e.slot);
      } else {
        entries_[kept++] = e;
        if (e.release < next) next = e.release;
      }
    }
    entries_.resize(kept);
    next_release_ = next;
  }

  // Whether a packet of `relay` is held: a later packet of its flow must wait behind it.
  bool holds(RelayId relay) const;
  // Forgets the packets of `relay` (its socket is gone); returns how many there were.
  std::size_t drop_relay(RelayId relay);

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }
  // The earliest release time (Timestamp::never() when empty).
  Timestamp next_release() const { return next_release_; }

 private:
  struct Entry {
    RelayId relay;
    std::uint32_t slot;
    std::uint32_t length;
    Timestamp release;
  };
  std::uint8_t* slot(std::uint32_t s) { return storage_.data() + std::size_t{s} * max_payload_; }
  void recompute_next();

  std::size_t capacity_;
  std::size_t max_payload_;
  std::vector<std::uint8_t> storage_;  // capacity x max_payload bytes
  std::vector<Entry> entries_;         // in arrival order; capacity reserved
  std::vector<std::uint32_t> free_;    // free slots; capacity reserved
  Timestamp next_release_ = Timestamp::never();
};

}  // namespace quicstep::client::tun
