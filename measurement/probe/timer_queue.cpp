#include "measurement/probe/timer_queue.hpp"

namespace quicstep::measurement::probe {

void TimerQueue::schedule(std::uint64_t id, std::uint64_t deadline) {
  auto it = live_.try_emplace(id, 0).first;
  it->second = ++generation_;
  heap_.push({deadline, id, it->second});
  // Stale entries are bounded by the pushes since they surfaced; compact when they
  // outnumber live timers by far, so the heap never grows without bound.
  if (heap_.size() > 64 && heap_.size() > 8 * live_.size()) {
    std::vector<Entry> keep;
    keep.reserve(live_.size());
    while (!heap_.empty()) {
      const Entry e = heap_.top();
      heap_.pop();
      auto l = live_.find(e.id);
      if (l != live_.end() && l->second == e.generation) keep.push_back(e);
    }
    heap_ = decltype(heap_)(std::greater<Entry>(), std::move(keep));
  }
}

void TimerQueue::cancel(std::uint64_t id) { live_.erase(id); }

void TimerQueue::drop_stale() {
  while (!heap_.empty()) {
    const Entry& e = heap_.top();
    auto it = live_.find(e.id);
    if (it != live_.end() && it->second == e.generation) return;
    heap_.pop();
  }
}

std::uint64_t TimerQueue::next() {
  drop_stale();
  return heap_.empty() ? UINT64_MAX : heap_.top().deadline;
}

std::vector<std::uint64_t> TimerQueue::pop_due(std::uint64_t now) {
  std::vector<std::uint64_t> due;
  for (drop_stale(); !heap_.empty() && heap_.top().deadline <= now; drop_stale()) {
    due.push_back(heap_.top().id);
    live_.erase(heap_.top().id);
    heap_.pop();
  }
  return due;
}

}  // namespace quicstep::measurement::probe
