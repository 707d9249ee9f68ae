// GateCore: what quicstep-gate does with one datagram, without I/O. A v1 Initial without a
// token gets a Retry (SCID naming a worker, round robin, via the server's CID codec; token
// from the shared AddressValidator; integrity tag by RetryWriter: ngtcp2_pkt_write_retry with a kept AEAD context). An Initial
// with a valid token is forwarded to the worker its DCID names (Retry token) or to the
// worker the steering program's DCID hash picks (NEW_TOKEN token: the 0-RTT packets that
// follow take the same hash), with the client address and original DCID. Everything else
// is dropped and counted. The caller sends, forwards and allowlists the flow.
#pragma once

#include <ngtcp2/ngtcp2.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "server_testbed/address_validator.hpp"
#include "server_testbed/cid_codec.hpp"
#include "server_testbed/gate/retry_writer.hpp"
#include "server_testbed/gate_forward.hpp"
#include "server_testbed/token/random_pool.hpp"

namespace quicstep::server_testbed::gate {

struct GateCounters {
  using C = std::atomic<std::uint64_t>;
  C rx_packets{0};
  C forwarded{0};        // handed to a worker's queue
  C allowlisted{0};      // flows put in the BPF allowlist
  C drop_not_initial{0}; // not a v1 Initial ngtcp2 accepts (garbage, other packet types)
  C drop_token{0};       // invalid, expired, replayed or unknown-key Retry token
  C drop_bad_worker{0};  // valid token, but the DCID names no worker of this config
  C drop_queue_full{0};  // the worker's queue was full (EAGAIN)
  C drop_send_failed{0}; // other send errors (worker socket gone: server restarting)
  nlohmann::json to_json(const TokenCounters& tokens) const;
  static void add(C& c) { c.fetch_add(1, std::memory_order_relaxed); }
};

class GateCore {
 public:
  enum class Kind : std::uint8_t { retry, forward, drop };
  struct Result {
    Kind kind = Kind::drop;
    std::uint32_t worker = 0;         // forward: the worker index
    std::span<const std::uint8_t> out;  // retry: the Retry packet; forward: the message
  };

  GateCore(const CidCodec& codec, AddressValidator validator, GateCounters& counters);

  // The returned span points into this object's buffer until the next call.
  Result on_datagram(std::span<const std::uint8_t> data, const sockaddr_storage& from,
                     std::uint64_t now_ms);

  TokenCounters& token_counters() { return validator_.counters(); }

 private:
  Result retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from, std::uint64_t now_ms);

  const CidCodec& codec_;
  AddressValidator validator_;
  GateCounters& counters_;
  std::uint32_t next_worker_ = 0;
  RetryWriter retry_writer_;
  token::RandomPool random_;  // Retry SCIDs' random part
  std::array<std::uint8_t, 65536> buf_{};
};

}  // namespace quicstep::server_testbed::gate
