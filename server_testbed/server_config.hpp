// The configuration of quicstep-server: a plain struct with defaults, filled by
// server_main.cpp from the command line and passed explicitly to the workers.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "server_testbed/cid_codec.hpp"
#include "server_testbed/migration_policy.hpp"
#include "server_testbed/token/universal_token.hpp"

namespace quicstep::server_testbed {

struct ServerConfig {
  sockaddr_storage listen{};            // one address and port; every worker binds it
  socklen_t listen_len = 0;
  std::uint32_t workers = 2;            // SO_REUSEPORT sockets, one thread each (1..64)
  bool pin = false;                     // pin worker i to CPU i % ncpu
  bool steering = true;                 // attach the SK_REUSEPORT program
  bool retry = false;                   // host Retry: every new connection must echo a token
  MigrationPolicy migration = MigrationPolicy::full;
  CidConfig cid;                        // connection-ID format (worker_count = workers)
  std::string cert_file;                // PEM certificate chain
  std::string key_file;                 // PEM private key
  std::string htdocs;                   // directory served; empty: only /bytes/N
  std::uint64_t max_body = 1ull << 30;  // largest /bytes/N and file served
  std::uint32_t think_ms = 0;           // each response waits this long after its request
  std::string qlog_dir;                 // a qlog per connection (ngtcp2's JSON-SEQ); empty: none
  // A flight written while the current path has no RTT sample (after an address change ngtcp2
  // resets the estimate to 333 ms) is not paced, as with ngtcp2 >= 0.14; the congestion window
  // bounds it. Off: Debian's ngtcp2 0.12.1, which then holds the next flight ~270 ms (README).
  bool unpaced_first_flight = false;
  std::uint32_t idle_timeout_ms = 30000;
  std::uint32_t max_connections = 20000;  // per worker; beyond it new Initials are ignored
  std::string stats_file;               // JSON counters, rewritten every second; empty: none
  std::uint32_t duration_s = 0;         // stop after this many seconds; 0: on SIGINT/SIGTERM
  bool verbose = false;                 // log every connection event
  std::string gate_name;                // --gate NAME: quicstep-gate in front; empty: none
  std::vector<std::uint8_t> master_key; // universal-token master key (file, or random)
  token::TokenConfig token;             // token lifetimes and key period
  // Workers validate addresses (Retry, universal tokens) and issue NEW_TOKEN: host Retry,
  // or gate mode, where they take over when the gate is down (fail-open).
  bool validate_addresses() const { return retry || !gate_name.empty(); }
};

}  // namespace quicstep::server_testbed
