// SharedInput: the targets, read by one thread of their own so an event loop never blocks
// on a slow pipe. Lines go into a bounded queue (the reader waits when it is full, so a
// million-line list never sits in memory); event loops take targets without blocking and
// are woken through their eventfd when targets arrive or the input ends. Bad lines are
// reported here: on stderr and as a bad_input record.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <istream>
#include <mutex>
#include <thread>
#include <vector>

#include "measurement/probe/target_input.hpp"

namespace quicstep::measurement::probe {

class SharedOutput;

class SharedInput {
 public:
  SharedInput(std::istream& in, SharedOutput& out, std::size_t capacity = 4096)
      : reader_(in), out_(out), capacity_(capacity == 0 ? 1 : capacity) {}
  ~SharedInput();  // joins the reader thread (after the input ended)
  SharedInput(const SharedInput&) = delete;
  SharedInput& operator=(const SharedInput&) = delete;

  // An eventfd written to (value 1) when targets become available or the input ends.
  // Precondition: called before start().
  void subscribe(int event_fd) { subscribers_.push_back(event_fd); }
  void start();
  // Waits for the reader thread (it ends with the input). Call before closing subscribers.
  void join();

  enum class Poll { target, empty, exhausted };
  // Never blocks: a target (into *out), none yet, or none ever again.
  Poll try_next(Target* out);

 private:
  void read_all();
  void wake_all();

  TargetReader reader_;
  SharedOutput& out_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_full_;
  std::deque<Target> queue_;
  bool ended_ = false;
  std::vector<int> subscribers_;
  std::thread thread_;
};

}  // namespace quicstep::measurement::probe
