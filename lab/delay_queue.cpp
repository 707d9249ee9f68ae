#include "lab/delay_queue.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace quicstep::lab {

DelayQueue::DelayQueue(std::vector<QueueConfig> queues, std::size_t max_held_per_queue)
    : max_held_(max_held_per_queue) {
  for (const auto& q : queues) queues_.push_back(Queue{q, {}, {}});
}

DelayQueue::Queue* DelayQueue::find(std::uint16_t queue) {
  for (auto& q : queues_)
    if (q.config.queue == queue) return &q;
  return nullptr;
}

Admission DelayQueue::admit(std::uint16_t queue, std::uint32_t id, Timestamp now, double draw) {
  Queue* q = find(queue);
  if (q == nullptr) return Admission::hold;  // not ours: the frontend accepts it at once
  if (draw < q->config.loss) {
    ++q->stats.lost;
    return Admission::drop_lost;
  }
  if (q->fifo.size() >= max_held_) {
    ++q->stats.overflow;
    return Admission::drop_full;
  }
  q->fifo.push_back(Held{id, now + q->config.delay});
  ++q->stats.held;
  q->stats.max_depth = std::max(q->stats.max_depth, q->fifo.size());
  return Admission::hold;
}

std::optional<Timestamp> DelayQueue::next_expiry() const {
  std::optional<Timestamp> next;
  for (const auto& q : queues_)
    if (!q.fifo.empty() && (!next || q.fifo.front().due < *next)) next = q.fifo.front().due;
  return next;
}

std::vector<Release> DelayQueue::release_due(Timestamp now) {
  std::vector<Release> out;
  for (auto& q : queues_) {
    std::size_t n = 0;
    std::uint32_t last = 0;
    while (!q.fifo.empty() && q.fifo.front().due <= now) {
      last = q.fifo.front().id;
      q.fifo.pop_front();
      ++n;
    }
    if (n > 0) {
      out.push_back(Release{q.config.queue, last, n});
      q.stats.released += n;
      ++q.stats.batches;
    }
  }
  return out;
}

namespace {

bool parse_u16(std::string_view s, std::uint16_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool parse_double(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() && std::isfinite(out);
}

bool parse_duration(std::string_view s, Duration& out) {
  struct Unit {
    std::string_view suffix;
    double ns;
  };
  // Longest suffixes first: "ms" and "us" end in "s" too.
  static constexpr Unit units[] = {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& u : units) {
    if (s.size() > u.suffix.size() && s.ends_with(u.suffix)) {
      double v = 0;
      if (!parse_double(s.substr(0, s.size() - u.suffix.size()), v)) return false;
      if (v < 0 || v > 60.0 * 1e9 / u.ns) return false;  // at most a minute
      out = Duration(static_cast<std::int64_t>(std::llround(v * u.ns)));
      return true;
    }
  }
  return false;
}

}  // namespace

ParsedQueue parse_queue_spec(const std::string& spec) {
  std::string_view s(spec);
  auto c1 = s.find(':');
  if (c1 == std::string_view::npos)
    return {std::nullopt, "queue spec is not NUM:DELAY[:LOSS]: `" + spec + "'"};
  auto c2 = s.find(':', c1 + 1);
  QueueConfig cfg;
  if (!parse_u16(s.substr(0, c1), cfg.queue))
    return {std::nullopt, "queue number is not 0-65535: `" + spec + "'"};
  auto delay = s.substr(c1 + 1, c2 == std::string_view::npos ? std::string_view::npos : c2 - c1 - 1);
  if (!parse_duration(delay, cfg.delay))
    return {std::nullopt, "delay is not a duration from 0 to 60s with a unit (ns, us, ms, s): `" +
                              spec + "'"};
  if (c2 != std::string_view::npos) {
    if (!parse_double(s.substr(c2 + 1), cfg.loss) || cfg.loss < 0 || cfg.loss >= 1)
      return {std::nullopt, "loss is not a probability in [0, 1): `" + spec + "'"};
  }
  return {cfg, {}};
}

}  // namespace quicstep::lab
