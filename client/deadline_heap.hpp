// DeadlineHeap: the watchdog's timers. A binary min-heap of (deadline, id) with a fixed
// capacity, where each id (a flow handle, < capacity) has at most one deadline and can be
// removed in O(log n) — so a confirmed or evicted flow leaves nothing behind and the heap
// never holds more than the flow table. All memory is allocated by the constructor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/timestamp.hpp"

namespace quicstep::client {

class DeadlineHeap {
 public:
  static constexpr std::uint32_t npos = 0xffffffffu;

  explicit DeadlineHeap(std::size_t capacity) : pos_(capacity, npos) { heap_.reserve(capacity); }

  std::size_t size() const { return heap_.size(); }
  bool empty() const { return heap_.empty(); }
  bool contains(std::uint32_t id) const { return pos_[id] != npos; }

  // The earliest deadline, or Timestamp max when empty.
  common::Timestamp top_deadline() const {
    return heap_.empty() ? common::Timestamp{std::numeric_limits<std::int64_t>::max()}
                         : heap_.front().deadline;
  }
  // Precondition: !empty().
  std::uint32_t top_id() const { return heap_.front().id; }

  // Sets (or moves) the deadline of `id`. Precondition: id < capacity.
  void set(std::uint32_t id, common::Timestamp deadline) {
    if (pos_[id] != npos) {
      const std::size_t i = pos_[id];
      heap_[i].deadline = deadline;
      sift_down(sift_up(i));
      return;
    }
    heap_.push_back({deadline, id});
    pos_[id] = static_cast<std::uint32_t>(heap_.size() - 1);
    sift_up(heap_.size() - 1);
  }

  // Removes the deadline of `id`, if any.
  void erase(std::uint32_t id) {
    const std::uint32_t i = pos_[id];
    if (i == npos) return;
    pos_[id] = npos;
    const Item last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    heap_[i] = last;
    pos_[last.id] = i;
    sift_down(sift_up(i));
  }

 private:
  struct Item {
    common::Timestamp deadline;
    std::uint32_t id;
  };

  void place(std::size_t i, const Item& item) {
    heap_[i] = item;
    pos_[item.id] = static_cast<std::uint32_t>(i);
  }

  std::size_t sift_up(std::size_t i) {
    const Item item = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!(item.deadline < heap_[parent].deadline)) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, item);
    return i;
  }

  void sift_down(std::size_t i) {
    const Item item = heap_[i];
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= heap_.size()) break;
      if (child + 1 < heap_.size() && heap_[child + 1].deadline < heap_[child].deadline) ++child;
      if (!(heap_[child].deadline < item.deadline)) break;
      place(i, heap_[child]);
      i = child;
    }
    place(i, item);
  }

  std::vector<Item> heap_;
  std::vector<std::uint32_t> pos_;  // id -> index in heap_, or npos
};

}  // namespace quicstep::client
