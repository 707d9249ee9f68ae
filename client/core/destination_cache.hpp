// DestinationCache: the bounded cache of destinations known not to support QUIC connection
// migration. The watchdog adds a destination when a flow's migration fails; the prober's
// results can be preloaded. Later flows to a cached destination stay on the channel.
//
// A destination is a server address and a UDP port; port 0 means "every port of this
// address" (what a prober line without a port says). Bounded (invariant 4): at most
// `capacity` entries, least recently used evicted. A preloaded destination is blocked for
// `ttl`. A watchdog failure blocks it for `first_penalty`, doubled on each repeat while the
// previous failure is remembered (for `ttl` after it), capped at `ttl`: one misjudged flow
// costs minutes, a server that really does not migrate soon stays blocked for `ttl`.
// Entries are forgotten `ttl` after their last add (dropped when looked up). No allocation
// after construction.
//
// The preload file (written by quicstep-probe), one destination per line:
//
//   # comment; blank lines are skipped
//   198.18.2.10,443 no_migration
//   2001:db8::10 ignores_new_address
//
// i.e. `address[,port] reason`: an IPv4 or IPv6 address in inet_pton form, optionally a
// comma and a port 1..65535, whitespace, then one reason word ([A-Za-z0-9_.-]+), nothing
// after it. A bad line is reported with its line number and skipped; the rest is loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/ip_packet.hpp"
#include "common/lru_table.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::core {

using common::Duration;
using common::IpAddress;
using common::Timestamp;

struct Destination {
  IpAddress address;
  std::uint16_t port = 0;  // 0: every port

  friend bool operator==(const Destination&, const Destination&) = default;
};

struct DestinationHash {
  std::uint64_t seed = 0;
  std::uint64_t operator()(const Destination& d) const noexcept;
};

// Why a destination is cached (what the prober or the watchdog found; preferred_address:
// the classifier's PreferredAddresses, a cache of its own).
enum class NonMigratingReason : std::uint8_t { migration_failed, preloaded, preferred_address };

class DestinationCache {
 public:
  // Precondition: capacity >= 1, ttl > 0. Allocates all memory. first_penalty <= 0 or
  // > ttl means ttl (no escalation).
  DestinationCache(std::size_t capacity, Duration ttl, std::uint64_t seed = 0,
                   Duration first_penalty = Duration::zero());

  std::size_t size() const { return table_.size(); }
  std::size_t capacity() const { return table_.capacity(); }

  // Adds (or refreshes) `d`: blocked until now + ttl (preloaded, preferred_address) or now +
  // the escalating penalty (migration_failed, see above). Evicts the least recently used
  // entry when full. Returns how long `d` is now blocked for.
  Duration add(const Destination& d, NonMigratingReason reason, Timestamp now);

  // Whether `address`:`port` is cached and blocked, as itself or as address:0.
  // Refreshes its LRU position; drops expired entries it meets.
  bool contains(const IpAddress& address, std::uint16_t port, Timestamp now);

  // Removes every entry.
  void clear();

  std::uint64_t evictions() const { return evictions_; }
  std::uint64_t expirations() const { return expirations_; }

 private:
  struct Entry {
    Timestamp blocked_until;  // contains() is true before this
    Timestamp forget_at;      // the entry (and its strike count) is dropped at this
    NonMigratingReason reason = NonMigratingReason::migration_failed;
    std::uint8_t strikes = 0;  // watchdog failures remembered
  };
  bool lookup(const Destination& d, Timestamp now);

  common::LruTable<Destination, Entry, DestinationHash> table_;
  Duration ttl_;
  Duration first_penalty_;
  std::uint64_t evictions_ = 0;
  std::uint64_t expirations_ = 0;
};

// One line of the preload file that could not be used.
struct DestinationListError {
  std::size_t line = 0;
  std::string message;  // quotes the bad value
};

struct DestinationList {
  std::vector<Destination> destinations;
  std::vector<DestinationListError> errors;  // at most kMaxListErrors
  std::size_t more_errors = 0;               // bad lines beyond those
};

// Parses the preload format above. Never fails as a whole: bad lines go to errors.
DestinationList parse_destination_list(std::string_view text);
inline constexpr std::size_t kMaxListErrors = 100;

// Reads and parses `path`. A file that cannot be read gives one error with line 0.
DestinationList read_destination_file(const std::string& path);

}  // namespace quicstep::client::core
