// QUIC-LB-style connection IDs that name the worker owning a connection
// (draft-ietf-quic-load-balancers, plaintext mode with a length self-description; see
// bpf/steering_shared.h for the octet layout the BPF program decodes). Every CID the server
// issues comes from here: the handshake SCID, the Retry SCID and NEW_CONNECTION_ID.
//
// Obfuscation (optional, a 64-bit key): octet 1 is XORed with a keyed hash of the first 8
// nonce octets, so worker ids do not appear in clear on the wire. It is obfuscation, not
// QUIC-LB's AES encryption: the BPF program must decode it and BPF has no AES.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "common/error.hpp"
#include "server_testbed/bpf/steering_shared.h"

namespace quicstep::server_testbed {

struct CidConfig {
  std::uint8_t config_id = 0;       // rotation bits, 0..2 (3 means unroutable in QUIC-LB)
  std::uint8_t cid_len = 16;        // 4..20 plain, 10..20 obfuscated
  std::uint32_t worker_count = 1;   // 1..64
  std::optional<std::uint64_t> key; // obfuscation key; none: worker id in clear
};

// The config as the BPF program's map holds it (enabled chosen by the caller).
qs_steer_config to_bpf_config(const CidConfig& config, bool enabled);

class CidCodec {
 public:
  // Errors: bad_value (config_id > 2, cid_len out of range, worker_count 0 or > 64).
  static common::Result<CidCodec> create(const CidConfig& config);

  // Writes a CID for worker into out (out.size() must be >= cid_len()), nonce from random
  // (random.size() >= cid_len() - 2; the caller draws it from a CSPRNG).
  // Precondition: worker < worker_count.
  void encode(std::uint32_t worker, std::span<const std::uint8_t> random,
              std::span<std::uint8_t> out) const;

  // The worker a DCID names. Errors: not_found (the CID is not one this config issues:
  // wrong length, config bits or first octet; a client-chosen Initial DCID), bad_value
  // (the worker id is beyond worker_count).
  common::Result<std::uint32_t> decode(std::span<const std::uint8_t> cid) const;

  std::size_t cid_len() const { return config_.cid_len; }
  const CidConfig& config() const { return config_; }

 private:
  explicit CidCodec(const CidConfig& config) : config_(config) {}
  CidConfig config_;
};

}  // namespace quicstep::server_testbed
