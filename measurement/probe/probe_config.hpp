// The prober's configuration: a plain struct, filled from the command line (probe_main.cpp).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "measurement/probe/static_hosts.hpp"

namespace quicstep::measurement::probe {

struct ProbeConfig {
  std::optional<sockaddr_storage> dns;     // resolver (--dns); unset with static hosts
  const StaticHosts* static_hosts = nullptr;  // --static-hosts, instead of DNS
  std::uint16_t port = 443;                // UDP port probed
  std::size_t tries = 3;                   // tries per migration test (majority)
  std::size_t threads = 1;                 // event loops
  std::size_t concurrency = 1000;          // connections in flight per process
  double rate = 0;                         // new connections per second, 0 = unlimited
  std::size_t dns_concurrency = 128;      // DNS queries in flight per process (--dns-concurrency)
  unsigned per_prefix = 0;                 // connections in flight per /24 or /48, 0 = no limit
  std::uint64_t timeout_ns = 5'000'000'000;  // per step: DNS, handshake, response, post-switch
  // An address's first handshake fails this soon when the server sent nothing at all
  // (--first-answer-timeout-ms; 0: timeout_ns applies). See TryOptions.
  std::uint64_t first_answer_timeout_ns = 0;
  bool ipv4 = true;                        // --family 4|6|both
  bool ipv6 = true;
  bool with_www = true;                    // probe www.<domain> too
  std::size_t max_addresses = 4;           // addresses probed per name and family
  std::string alpn = "h3";
  sockaddr_storage local4{}, local6{};     // first path's local address (wildcard by default)
  std::optional<sockaddr_storage> second_local4, second_local6;  // address migration
};

}  // namespace quicstep::measurement::probe
