#include "client/core/destination_cache.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace quicstep::client::core {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t word) {
  h = (h ^ word) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_reason_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-';
}

// Built by appends: GCC 12's -Wrestrict misfires on `"'" + std::string(s) + "'"` at -O3.
std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

// Parses "address[,port]"; the failure says why, quoting the bad part.
common::Outcome parse_destination(std::string_view text, Destination* out) {
  std::string_view addr = text;
  std::string_view port;
  if (const auto comma = text.find(','); comma != std::string_view::npos) {
    addr = text.substr(0, comma);
    port = text.substr(comma + 1);
  }
  const std::string a(addr);
  std::array<std::uint8_t, 16> bytes{};
  if (inet_pton(AF_INET, a.c_str(), bytes.data()) == 1) {
    out->address = IpAddress::v4({bytes[0], bytes[1], bytes[2], bytes[3]});
  } else if (inet_pton(AF_INET6, a.c_str(), bytes.data()) == 1) {
    out->address = IpAddress::v6(bytes);
  } else {
    return common::Failure("not an IPv4 or IPv6 address: " + quoted(addr));
  }
  out->port = 0;
  if (text.find(',') == std::string_view::npos) return {};
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return common::Failure("port is not a number in 1..65535: " + quoted(port));
  }
  out->port = static_cast<std::uint16_t>(value);
  return {};
}

// Parses one non-empty, non-comment line; the failure says why.
common::Outcome parse_line(std::string_view line, Destination* out) {
  std::size_t split = 0;
  while (split < line.size() && !is_space(line[split])) ++split;
  if (split == line.size()) return common::Failure("missing the reason after " + quoted(line));
  if (auto parsed = parse_destination(line.substr(0, split), out); !parsed) return parsed;
  const std::string_view reason = trim(line.substr(split));
  for (const char c : reason) {
    if (!is_reason_char(c)) {
      return common::Failure("the reason must be one word of [A-Za-z0-9_.-]: " + quoted(reason));
    }
  }
  return {};
}

}  // namespace

std::uint64_t DestinationHash::operator()(const Destination& d) const noexcept {
  std::uint64_t a, b;
  std::memcpy(&a, d.address.bytes.data(), 8);
  std::memcpy(&b, d.address.bytes.data() + 8, 8);
  std::uint64_t h = mix(mix(seed ^ 0x2545f4914f6cdd1dull, a), b);
  h = mix(h, std::uint64_t{d.port} << 8 | static_cast<std::uint64_t>(d.address.family));
  return h * 0x94d049bb133111ebull;
}

DestinationCache::DestinationCache(std::size_t capacity, Duration ttl, std::uint64_t seed,
                                   Duration first_penalty)
    : table_(capacity, DestinationHash{seed}),
      ttl_(ttl),
      first_penalty_(first_penalty <= Duration::zero() || first_penalty > ttl ? ttl
                                                                               : first_penalty) {}

Duration DestinationCache::add(const Destination& d, NonMigratingReason reason, Timestamp now) {
  auto h = table_.find(d);
  Entry old;  // what is remembered of `d` (nothing once forgotten)
  if (h != table_.npos && table_.value(h).forget_at > now) old = table_.value(h);
  std::uint8_t strikes = old.strikes;
  if (h == table_.npos) {
    if (table_.full()) {
      table_.erase(table_.oldest());
      ++evictions_;
    }
    h = table_.insert(d);
  } else {
    table_.touch(h);
  }
  Duration block = ttl_;
  if (reason == NonMigratingReason::migration_failed) {
    if (strikes < 255) ++strikes;
    block = first_penalty_;
    for (std::uint8_t i = 1; i < strikes && block < ttl_; ++i) block *= 2;
    block = std::min(block, ttl_);
  }
  // A block is never shortened by a later add (a preloaded one by a watchdog penalty).
  const Timestamp until = std::max(now + block, old.blocked_until);
  table_.value(h) = Entry{until, now + ttl_, reason, strikes};
  return block;
}

bool DestinationCache::lookup(const Destination& d, Timestamp now) {
  const auto h = table_.find(d);
  if (h == table_.npos) return false;
  const Entry& e = table_.value(h);
  if (e.forget_at <= now) {
    table_.erase(h);
    ++expirations_;
    return false;
  }
  if (e.blocked_until <= now) return false;  // served its penalty; its strikes are kept
  table_.touch(h);
  return true;
}

bool DestinationCache::contains(const IpAddress& address, std::uint16_t port, Timestamp now) {
  if (table_.empty()) return false;
  if (port != 0 && lookup(Destination{address, port}, now)) return true;
  return lookup(Destination{address, 0}, now);
}

void DestinationCache::clear() {
  while (!table_.empty()) table_.erase(table_.oldest());
}

DestinationList parse_destination_list(std::string_view text) {
  DestinationList out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = trim(line);
    if (line.empty()) continue;
    Destination d;
    common::Outcome parsed = parse_line(line, &d);
    if (parsed) {
      out.destinations.push_back(d);
    } else if (out.errors.size() < kMaxListErrors) {
      out.errors.push_back({line_no, parsed.error().message});
    } else {
      ++out.more_errors;
    }
  }
  return out;
}

DestinationList read_destination_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    DestinationList out;
    out.errors.push_back({0, "cannot read " + quoted(path) + ": " + std::strerror(errno)});
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_destination_list(text.str());
}

}  // namespace quicstep::client::core
