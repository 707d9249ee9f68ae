// Deadline heaps: many timers, one deadline per key, the earliest found in O(1) and set,
// moved or removed in O(log n), so that a caller never scans every timer on a wake-up and a
// cancelled timer leaves nothing behind. Sans-IO: deadlines are Timestamps the caller passes.
//
// Two flavours share one binary min-heap of (deadline, key), ordered by deadline, then by key
// (std::less), so due keys come out earliest first and ties in key order:
//   DenseDeadlineHeap    keys are indices below a capacity fixed at construction; all memory
//                        is allocated by the constructor (the classifier's watchdog timers,
//                        one per flow handle).
//   DeadlineHeap<Key>    any hashable, ordered key (a connection pointer, an index); grows
//                        with the number of live timers (the server's and the tools'
//                        connection deadlines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/timestamp.hpp"

namespace quicstep::common {

// Where each key sits in the heap, for keys 0 <= key < capacity.
class DenseHeapPositions {
 public:
  static constexpr std::uint32_t npos = 0xffffffffu;
  explicit DenseHeapPositions(std::size_t capacity = 0) : pos_(capacity, npos) {}
  std::uint32_t find(std::uint32_t key) const { return pos_[key]; }
  void put(std::uint32_t key, std::uint32_t index) { pos_[key] = index; }
  void remove(std::uint32_t key) { pos_[key] = npos; }
  std::size_t capacity() const { return pos_.size(); }

 private:
  std::vector<std::uint32_t> pos_;
};

// Where each key sits in the heap, for any hashable key.
template <typename Key, typename Hash = std::hash<Key>>
class HashHeapPositions {
 public:
  static constexpr std::uint32_t npos = 0xffffffffu;
  std::uint32_t find(const Key& key) const {
    auto it = pos_.find(key);
    return it == pos_.end() ? npos : it->second;
  }
  void put(const Key& key, std::uint32_t index) { pos_[key] = index; }
  void remove(const Key& key) { pos_.erase(key); }
  std::size_t capacity() const { return 0; }  // grows as needed

 private:
  std::unordered_map<Key, std::uint32_t, Hash> pos_;
};

template <typename Key, typename Positions>
class BasicDeadlineHeap {
 public:
  explicit BasicDeadlineHeap(Positions positions = Positions{})
      : positions_(std::move(positions)) {
    heap_.reserve(positions_.capacity());
  }

  std::size_t size() const { return heap_.size(); }
  bool empty() const { return heap_.empty(); }
  bool contains(const Key& key) const { return positions_.find(key) != Positions::npos; }

  // The earliest deadline, or Timestamp::never() when empty.
  Timestamp next() const { return heap_.empty() ? Timestamp::never() : heap_.front().deadline; }
  // The key of the earliest deadline. Precondition: !empty().
  const Key& top() const { return heap_.front().key; }

  // Sets (or moves) the deadline of `key`; Timestamp::never() removes it. Dense heap
  // precondition: key < capacity.
  void set(const Key& key, Timestamp deadline) {
    if (deadline == Timestamp::never()) return erase(key);
    const std::uint32_t i = positions_.find(key);
    if (i != Positions::npos) {
      heap_[i].deadline = deadline;
      sift_down(sift_up(i));
      return;
    }
    heap_.push_back({deadline, key});
    positions_.put(key, static_cast<std::uint32_t>(heap_.size() - 1));
    sift_up(heap_.size() - 1);
  }

  // Removes the deadline of `key`, if it has one.
  void erase(const Key& which) {
    const Key key = which;  // `which` may refer into the heap (top())
    const std::uint32_t i = positions_.find(key);
    if (i == Positions::npos) return;
    positions_.remove(key);
    const Item last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    heap_[i] = last;
    positions_.put(last.key, i);
    sift_down(sift_up(i));
  }

  // Removes and returns the keys whose deadline is <= now, earliest first.
  std::vector<Key> take_due(Timestamp now) {
    std::vector<Key> due;
    while (!heap_.empty() && heap_.front().deadline <= now) {
      due.push_back(heap_.front().key);
      erase(due.back());
    }
    return due;
  }

 private:
  struct Item {
    Timestamp deadline;
    Key key;
  };

  static bool before(const Item& a, const Item& b) {
    if (a.deadline != b.deadline) return a.deadline < b.deadline;
    return std::less<Key>{}(a.key, b.key);
  }

  void place(std::size_t i, const Item& item) {
    heap_[i] = item;
    positions_.put(item.key, static_cast<std::uint32_t>(i));
  }

  std::size_t sift_up(std::size_t i) {
    const Item item = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!before(item, heap_[parent])) break;
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
      if (child + 1 < heap_.size() && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], item)) break;
      place(i, heap_[child]);
      i = child;
    }
    place(i, item);
  }

  std::vector<Item> heap_;
  Positions positions_;
};

// Keys 0 <= key < capacity; no allocation after construction.
class DenseDeadlineHeap : public BasicDeadlineHeap<std::uint32_t, DenseHeapPositions> {
 public:
  static constexpr std::uint32_t npos = DenseHeapPositions::npos;
  explicit DenseDeadlineHeap(std::size_t capacity)
      : BasicDeadlineHeap(DenseHeapPositions(capacity)) {}
};

// Any key with std::hash (or Hash) and std::less.
template <typename Key, typename Hash = std::hash<Key>>
using DeadlineHeap = BasicDeadlineHeap<Key, HashHeapPositions<Key, Hash>>;

}  // namespace quicstep::common
