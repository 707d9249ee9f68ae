// LruTable<Key, Value, Hash>: a fixed-capacity hash map with least-recently-used order, for
// the flow tables and caches of the classifier, the censor and the handshake observer
// (invariant 4: bounded, no growth with traffic).
//
// All memory is allocated by the constructor; find/insert/erase/touch never allocate.
// Entries live in a slot array addressed by a stable uint32_t handle; an open-addressing
// index (linear probing, load factor <= 1/2, backward-shift deletion) maps keys to slots,
// and an intrusive doubly-linked list keeps slots from newest to oldest. The table never
// evicts by itself: when full(), the caller erases oldest() (and learns what it evicts).
//
// Hash must be a callable `std::uint64_t(const Key&)`; the index stores 32 bits of it to
// skip most key comparisons. Eq compares keys.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace quicstep::common {

template <typename Key, typename Value, typename Hash, typename Eq = std::equal_to<Key>>
class LruTable {
 public:
  using Handle = std::uint32_t;
  static constexpr Handle npos = 0xffffffffu;

  // Precondition: 1 <= capacity <= 2^30.
  LruTable(std::size_t capacity, Hash hash)
      : hash_(std::move(hash)),
        slots_(capacity),
        index_(std::bit_ceil(capacity * 2)),
        mask_(index_.size() - 1) {
    for (std::size_t i = 0; i < capacity; ++i) {
      slots_[i].next = static_cast<Handle>(i + 1 < capacity ? i + 1 : npos);
    }
    free_ = 0;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }
  bool full() const { return size_ == slots_.size(); }
  bool empty() const { return size_ == 0; }

  // The handle of `key`, or npos. Does not change the LRU order.
  Handle find(const Key& key) const {
    const std::uint64_t h = hash_(key);
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Bucket& b = index_[i];
      if (b.slot == npos) return npos;
      if (b.tag == tag && eq_(slots_[b.slot].key, key)) return b.slot;
    }
  }

  // Inserts `key` (which must be absent: check find() first) as the newest entry, with a
  // value-initialised Value. Returns npos, inserting nothing, when full().
  Handle insert(const Key& key) {
    if (free_ == npos) return npos;
    const Handle s = free_;
    free_ = slots_[s].next;
    Slot& slot = slots_[s];
    slot.key = key;
    slot.value = Value{};
    const std::uint64_t h = hash_(key);
    slot.tag = static_cast<std::uint32_t>(h >> 32);
    std::size_t i = h & mask_;
    while (index_[i].slot != npos) i = (i + 1) & mask_;
    index_[i] = Bucket{s, slot.tag};
    slot.bucket = static_cast<std::uint32_t>(i);
    link_front(s);
    ++size_;
    return s;
  }

  // Removes the entry of handle `s`. Precondition: `s` is a live handle.
  void erase(Handle s) {
    unlink(s);
    remove_bucket(slots_[s].bucket);
    slots_[s].next = free_;
    free_ = s;
    --size_;
  }

  // Makes `s` the newest entry.
  void touch(Handle s) {
    if (head_ == s) return;
    unlink(s);
    link_front(s);
  }

  // Newest and oldest entries (npos when empty), and iteration from newest to oldest.
  Handle newest() const { return head_; }
  Handle oldest() const { return tail_; }
  Handle older(Handle s) const { return slots_[s].next; }

  const Key& key(Handle s) const { return slots_[s].key; }
  Value& value(Handle s) { return slots_[s].value; }
  const Value& value(Handle s) const { return slots_[s].value; }

 private:
  // Cache-line aligned, so that a key and the head of its value share one line.
  struct alignas(64) Slot {
    Key key{};
    Value value{};
    Handle prev = npos;  // newer
    Handle next = npos;  // older (or the next free slot)
    std::uint32_t bucket = 0;
    std::uint32_t tag = 0;
  };
  struct Bucket {
    Handle slot = npos;
    std::uint32_t tag = 0;
  };

  void link_front(Handle s) {
    slots_[s].prev = npos;
    slots_[s].next = head_;
    if (head_ != npos) slots_[head_].prev = s;
    head_ = s;
    if (tail_ == npos) tail_ = s;
  }

  void unlink(Handle s) {
    Slot& slot = slots_[s];
    if (slot.prev != npos) slots_[slot.prev].next = slot.next; else head_ = slot.next;
    if (slot.next != npos) slots_[slot.next].prev = slot.prev; else tail_ = slot.prev;
  }

  // Backward-shift deletion: keeps every probe chain unbroken without tombstones.
  void remove_bucket(std::size_t hole) {
    for (std::size_t i = (hole + 1) & mask_;; i = (i + 1) & mask_) {
      const Bucket b = index_[i];
      if (b.slot == npos) break;
      const std::size_t home = hash_(slots_[b.slot].key) & mask_;
      // Move b into the hole unless its home lies cyclically in (hole, i].
      const bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
      if (stays) continue;
      index_[hole] = b;
      slots_[b.slot].bucket = static_cast<std::uint32_t>(hole);
      hole = i;
    }
    index_[hole] = Bucket{};
  }

  Hash hash_;
  [[no_unique_address]] Eq eq_;
  std::vector<Slot> slots_;
  std::vector<Bucket> index_;
  std::size_t mask_;
  Handle head_ = npos;
  Handle tail_ = npos;
  Handle free_ = npos;
  std::size_t size_ = 0;
};

}  // namespace quicstep::common
