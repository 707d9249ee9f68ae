// TimerQueue: the next deadline of many timers without scanning them all. A min-heap with
// lazy deletion: schedule() supersedes a timer's earlier deadline (the old heap entry is
// skipped when it surfaces), cancel() forgets the timer. Time is passed in (ns).
#pragma once

#include <cstdint>
#include <queue>
#include <unordered_map>
#include <vector>

namespace quicstep::measurement::probe {

class TimerQueue {
 public:
  // Sets (or moves) timer `id` to `deadline`.
  void schedule(std::uint64_t id, std::uint64_t deadline);
  void cancel(std::uint64_t id);
  // The earliest live deadline, UINT64_MAX with none.
  std::uint64_t next();
  // Removes and returns the timers whose deadline is <= now, earliest first.
  std::vector<std::uint64_t> pop_due(std::uint64_t now);
  std::size_t live() const { return live_.size(); }
  std::size_t heap_size() const { return heap_.size(); }

 private:
  struct Entry {
    std::uint64_t deadline;
    std::uint64_t id;
    std::uint64_t generation;
    bool operator>(const Entry& o) const { return deadline > o.deadline; }
  };
  void drop_stale();

  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  std::unordered_map<std::uint64_t, std::uint64_t> live_;  // id -> generation of its entry
  std::uint64_t generation_ = 0;
};

}  // namespace quicstep::measurement::probe
