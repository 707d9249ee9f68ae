// The delay line's core, sans-IO: which held packet is due when. The nfqueue frontend
// (delay_line.cpp) passes packets and time in and turns releases into verdicts.
//
// Each nfqueue has a constant delay, so its packets are due in arrival order: one FIFO per
// queue, released in order. Releases are per queue "every packet up to id N" — exactly a
// batch verdict, which also releases packets whose queue messages were lost (ENOBUFS),
// since nfqueue ids grow by one per packet on a queue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/timestamp.hpp"

namespace quicstep::lab {

using common::Duration;
using common::Timestamp;

// One queue's emulation: what `--queue NUM:DELAY[:LOSS]` says.
struct QueueConfig {
  std::uint16_t queue = 0;     // nfqueue number
  Duration delay{0};           // added to every packet that is not lost
  double loss = 0.0;           // probability in [0, 1) that a packet is dropped
};

// Counters per queue, for the stats file.
struct QueueStats {
  std::uint64_t held = 0;        // packets accepted into the FIFO
  std::uint64_t released = 0;    // packets released (by a batch verdict)
  std::uint64_t lost = 0;        // dropped by the loss emulation
  std::uint64_t overflow = 0;    // dropped because the FIFO was full
  std::uint64_t batches = 0;     // batch verdicts issued
  std::size_t max_depth = 0;     // most packets held at once
};

enum class Admission { hold, drop_lost, drop_full };

// A release: every packet of `queue` with an id up to `last_id` is due.
struct Release {
  std::uint16_t queue;
  std::uint32_t last_id;
  std::size_t count;  // packets of ours it covers (not counting lost messages)
};

class DelayQueue {
 public:
  // Preconditions: queue numbers distinct, delays >= 0, loss in [0, 1); max_held > 0.
  DelayQueue(std::vector<QueueConfig> queues, std::size_t max_held_per_queue);

  // A packet arrived on `queue` at `now`; `draw` is uniform in [0, 1) (the loss coin).
  // Returns whether to hold it or drop it now. Unknown queues are held with no delay.
  Admission admit(std::uint16_t queue, std::uint32_t id, Timestamp now, double draw);

  // When the next held packet is due; nullopt when nothing is held.
  std::optional<Timestamp> next_expiry() const;

  // Removes every packet due at `now` and returns one release per queue that had any.
  std::vector<Release> release_due(Timestamp now);

  std::size_t queue_count() const { return queues_.size(); }
  const QueueConfig& config(std::size_t i) const { return queues_[i].config; }
  const QueueStats& stats(std::size_t i) const { return queues_[i].stats; }

 private:
  struct Held {
    std::uint32_t id;
    Timestamp due;
  };
  struct Queue {
    QueueConfig config;
    std::deque<Held> fifo;
    QueueStats stats;
  };
  Queue* find(std::uint16_t queue);

  std::vector<Queue> queues_;
  std::size_t max_held_;
};

// Parses "NUM:DELAY[:LOSS]", DELAY with a unit (ns, us, ms, s; decimals allowed), e.g.
// "3:20ms", "4:1500us:0.01". The whole string must be consumed; the error quotes it.
// Returns the config, or an error message.
struct ParsedQueue {
  std::optional<QueueConfig> config;
  std::string error;
};
ParsedQueue parse_queue_spec(const std::string& spec);

}  // namespace quicstep::lab
