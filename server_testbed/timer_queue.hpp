// TimerQueue: the deadlines of a worker's connections, ordered, so that the worker finds the
// next deadline and the due connections in O(log n) instead of scanning every connection on
// every wake-up (with 5,000 connections per worker the scan made each datagram cost ~0.4 ms
// and the socket overflowed). Sans-IO, header-only; one deadline per key.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace quicstep::server_testbed {

template <typename Key>
class TimerQueue {
 public:
  static constexpr std::uint64_t kNever = UINT64_MAX;

  // Sets (or moves) key's deadline; kNever removes it.
  void set(const Key& key, std::uint64_t deadline) {
    erase(key);
    if (deadline == kNever) return;
    order_.emplace(deadline, key);
    at_.emplace(key, deadline);
  }

  void erase(const Key& key) {
    auto it = at_.find(key);
    if (it == at_.end()) return;
    order_.erase({it->second, key});
    at_.erase(it);
  }

  // The earliest deadline, kNever when empty.
  std::uint64_t next() const { return order_.empty() ? kNever : order_.begin()->first; }

  // Removes and returns the keys due at `now` (deadline <= now), earliest first.
  std::vector<Key> take_due(std::uint64_t now) {
    std::vector<Key> due;
    while (!order_.empty() && order_.begin()->first <= now) {
      due.push_back(order_.begin()->second);
      at_.erase(order_.begin()->second);
      order_.erase(order_.begin());
    }
    return due;
  }

  std::size_t size() const { return at_.size(); }

 private:
  std::set<std::pair<std::uint64_t, Key>> order_;
  std::unordered_map<Key, std::uint64_t> at_;
};

}  // namespace quicstep::server_testbed
