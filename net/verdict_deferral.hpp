// VerdictDeferral: queued packets whose verdict waits for a time (Decision::not_before, the
// native-switch delay). Sans-IO and bounded: the nfqueue frontend owns one, adds a packet
// when its decision's time has not come, and releases due packets, oldest id first, before
// it sends any later verdict. All memory is allocated by the constructor.
//
// Packets of one flow share one release time, so releasing everything due keeps each flow's
// order. A full deferral is refused (the caller sends the verdict at once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/timestamp.hpp"
#include "net/verdict_plan.hpp"

namespace quicstep::net {

class VerdictDeferral {
 public:
  explicit VerdictDeferral(std::size_t capacity);

  // False when full (nothing stored).
  bool defer(std::uint32_t id, std::optional<std::uint32_t> mark, common::Timestamp release);
  // Appends the packets whose release time is <= now to `out`, in id order, and forgets them.
  void release_due(common::Timestamp now, std::vector<PendingVerdict>* out);
  // Forgets every deferred packet (their queue entries were released some other way);
  // returns how many there were.
  std::size_t abandon();

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  // The earliest release time (Timestamp max when empty).
  common::Timestamp next_release() const;
  // The smallest deferred id, if any: no batch verdict may reach it.
  std::optional<std::uint32_t> oldest_id() const;

 private:
  struct Entry {
    std::uint32_t id;
    std::optional<std::uint32_t> mark;
    common::Timestamp release;
  };
  std::size_t capacity_;
  std::vector<Entry> entries_;  // in id order (ids increase as packets are queued)
};

}  // namespace quicstep::net
