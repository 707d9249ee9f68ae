// Per-worker counters: written by one worker thread, read by the stats thread (relaxed
// atomics; the figures are statistics, not synchronisation).
#pragma once

#include <atomic>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace quicstep::server_testbed {

struct WorkerCounters {
  using C = std::atomic<std::uint64_t>;
  C rx_packets{0};          // datagrams received
  C rx_bytes{0};
  C tx_packets{0};          // datagrams sent
  C tx_bytes{0};
  C tx_dropped{0};          // sendmsg failed (EAGAIN, ...): QUIC recovers by retransmission
  C owned{0};               // short/Handshake packets whose DCID names this worker
  C misdirected{0};         // ... whose DCID names another worker (dropped: no state here)
  C unknown_cid{0};         // ... naming this worker, but no such connection (gone, forged)
  C malformed{0};           // undecodable header, bad lengths
  C version_negotiation{0}; // unknown versions answered with Version Negotiation
  C accepted{0};            // connections created
  C rejected_initial{0};    // Initials refused (ngtcp2_accept, over max_connections)
  C retry_sent{0};
  C retry_token_bad{0};
  C handshakes{0};          // handshakes completed
  C path_validated{0};      // successful path validations (migrations followed)
  C path_failed{0};
  C policy_ignored{0};      // packets ignored by the migration policy
  C requests{0};            // HTTP requests answered
  C closed{0};              // connections removed
  C active{0};              // connections now
  C early_data_accepted{0}; // handshakes in which the client's 0-RTT data was accepted

  nlohmann::json to_json() const {
    auto g = [](const C& c) { return c.load(std::memory_order_relaxed); };
    return {{"rx_packets", g(rx_packets)},   {"rx_bytes", g(rx_bytes)},
            {"tx_packets", g(tx_packets)},   {"tx_bytes", g(tx_bytes)},
            {"tx_dropped", g(tx_dropped)},   {"owned", g(owned)},
            {"misdirected", g(misdirected)}, {"unknown_cid", g(unknown_cid)},
            {"malformed", g(malformed)},     {"version_negotiation", g(version_negotiation)},
            {"accepted", g(accepted)},       {"rejected_initial", g(rejected_initial)},
            {"retry_sent", g(retry_sent)},   {"retry_token_bad", g(retry_token_bad)},
            {"handshakes", g(handshakes)},   {"path_validated", g(path_validated)},
            {"path_failed", g(path_failed)}, {"policy_ignored", g(policy_ignored)},
            {"requests", g(requests)},       {"closed", g(closed)},
            {"active", g(active)},           {"early_data_accepted", g(early_data_accepted)}};
  }
  static void add(C& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
};

}  // namespace quicstep::server_testbed
