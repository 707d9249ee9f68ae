#include "measurement/probe/shared_input.hpp"

#include <unistd.h>

#include <cstdint>
#include <iostream>

#include "measurement/probe/probe_engine.hpp"
#include "measurement/probe/probe_record.hpp"

namespace quicstep::measurement::probe {

SharedInput::~SharedInput() { join(); }

void SharedInput::join() {
  if (thread_.joinable()) thread_.join();
}

void SharedInput::start() { thread_ = std::thread([this] { read_all(); }); }

void SharedInput::wake_all() {
  const std::uint64_t one = 1;
  for (int fd : subscribers_) {
    [[maybe_unused]] const auto n = ::write(fd, &one, sizeof(one));
  }
}

void SharedInput::read_all() {
  while (auto line = reader_.next()) {
    if (line->kind != LineKind::target) {
      std::cerr << "quicstep-probe: input line " << line->target.input_line << ": "
                << line->reason << '\n';
      out_.write_line(bad_input_json_line(line->target.input_line, line->reason));
      continue;
    }
    bool was_empty = false;
    {
      std::unique_lock lock(mutex_);
      not_full_.wait(lock, [&] { return queue_.size() < capacity_; });
      was_empty = queue_.empty();
      queue_.push_back(std::move(line->target));
    }
    // Loops drain the queue before they sleep, so only an empty → non-empty change needs
    // to wake them.
    if (was_empty) wake_all();
  }
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
  }
  wake_all();
}

SharedInput::Poll SharedInput::try_next(Target* out) {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return ended_ ? Poll::exhausted : Poll::empty;
  *out = std::move(queue_.front());
  queue_.pop_front();
  not_full_.notify_one();
  return Poll::target;
}

}  // namespace quicstep::measurement::probe
