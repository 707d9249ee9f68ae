// The universal token: one AES-128-GCM token family that the gate and every worker can issue
// and verify from one master key (TurboRetry's idea; see README "Retry gate" for the format
// and how it differs from draft-ietf-quic-retry-offload). Sans-IO: the caller passes the
// wall-clock time in milliseconds; nothing here reads a clock or a socket.
//
// Wire format (octets):
//   0       type: 0xa1 Retry token, 0xa2 NEW_TOKEN token (in clear: a cheap first filter)
//   1       key id: the low 8 bits of the key sequence (floor(time / key_period))
//   2..13   nonce: 4-octet per-codec counter || 8 random octets (never from client input)
//   14..    AES-128-GCM ciphertext of: issued_ms (8, big endian) [Retry: odcid_len (1), odcid]
//   last 16 GCM tag over the ciphertext and the AAD:
//           octets 0..13 || family (4|6) || client address (4|16) [Retry: rscid_len, rscid]
// The client address (port excluded) and the Retry SCID are authenticated but not carried:
// the verifier takes them from the packet, so a token from another address or for another
// CID fails the tag exactly like a forged one.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <nettle/gcm.h>

#include "common/error.hpp"
#include "server_testbed/token/random_pool.hpp"

namespace quicstep::server_testbed::token {

enum class TokenType : std::uint8_t { retry = 0xa1, new_token = 0xa2 };

struct TokenConfig {
  std::uint64_t key_period_ms = 3600000;           // key sequence = time / period
  std::uint32_t grace_periods = 1;                 // older key sequences still accepted
  std::uint64_t retry_lifetime_ms = 10000;         // Retry tokens (RFC 9000 8.1.2: short)
  std::uint64_t new_token_lifetime_ms = 3600000;   // NEW_TOKEN tokens (<= key_period)
  std::uint64_t max_clock_skew_ms = 2000;          // issued_ms may be this far in the future
};

// The client's IP address as bound into a token (port excluded: NAT rebinding).
struct ClientAddress {
  std::uint8_t family = 0;  // 4 or 6
  std::array<std::uint8_t, 16> bytes{};
  std::size_t size() const { return family == 4 ? 4 : 16; }
};
// Errors: unsupported (neither AF_INET nor AF_INET6).
common::Result<ClientAddress> client_address(const sockaddr_storage& addr);

constexpr std::size_t kMasterKeyMin = 32;
constexpr std::size_t kNonceLen = 12;
constexpr std::size_t kHeaderLen = 2 + kNonceLen;
constexpr std::size_t kTagLen = 16;
constexpr std::size_t kMaxCidLen = 20;
constexpr std::size_t kMaxTokenLen = kHeaderLen + 8 + 1 + kMaxCidLen + kTagLen;  // 59

enum class Verdict : std::uint8_t {
  valid,
  malformed,    // not one of ours: unknown type octet, wrong length
  unknown_key,  // key id is not the current sequence nor one in the grace period
  invalid,      // GCM tag failed: forged, tampered, other address, other Retry SCID
  expired,      // authentic, but older than its type's lifetime
};
const char* to_string(Verdict verdict);

struct VerifiedToken {
  TokenType type = TokenType::retry;
  std::uint64_t issued_ms = 0;
  std::array<std::uint8_t, kNonceLen> nonce{};
  std::array<std::uint8_t, kMaxCidLen> odcid{};  // Retry tokens only
  std::size_t odcid_len = 0;
};

class TokenCodec {
 public:
  // master: the key file's contents, at least kMasterKeyMin octets. issuer_random seeds
  // nothing secret: the random half of each nonce is drawn per token from GnuTLS.
  // Errors: bad_length (master too short), bad_value (key_period_ms 0).
  static common::Result<TokenCodec> create(std::span<const std::uint8_t> master,
                                           const TokenConfig& config);

  // Writes a Retry token into out (>= kMaxTokenLen octets); returns its length, or 0 when a
  // CID is longer than 20 octets. rscid is the Retry packet's SCID (the client's next DCID).
  std::size_t issue_retry(std::span<std::uint8_t> out, const ClientAddress& client,
                          std::span<const std::uint8_t> odcid, std::span<const std::uint8_t> rscid,
                          std::uint64_t now_ms);
  // A NEW_TOKEN token: bound to the address only (the next connection has new CIDs).
  std::size_t issue_new_token(std::span<std::uint8_t> out, const ClientAddress& client,
                              std::uint64_t now_ms);

  // Verifies a token carried by an Initial from client whose DCID is dcid (checked against
  // the Retry SCID for Retry tokens; ignored for NEW_TOKEN). *out is filled when valid (and
  // for expired tokens, whose contents are authentic).
  Verdict verify(std::span<const std::uint8_t> token, const ClientAddress& client,
                 std::span<const std::uint8_t> dcid, std::uint64_t now_ms, VerifiedToken* out);

  const TokenConfig& config() const { return config_; }

 private:
  // A key sequence's AES key schedule and GHASH table, expanded once (gcm_aes128_set_key
  // per token was ~100 ns); set_iv resets the per-message state.
  struct KeySlot {
    std::uint64_t seq = UINT64_MAX;
    gcm_aes128_ctx gcm{};
  };
  TokenCodec(std::span<const std::uint8_t> master, const TokenConfig& config);
  gcm_aes128_ctx& gcm_for(std::uint64_t seq);
  std::size_t issue(TokenType type, std::span<std::uint8_t> out, const ClientAddress& client,
                    std::span<const std::uint8_t> odcid, std::span<const std::uint8_t> rscid,
                    std::uint64_t now_ms);

  std::array<std::uint8_t, 32> prk_{};  // HKDF-Extract(salt, master)
  TokenConfig config_;
  std::array<KeySlot, 4> keys_{};       // derived keys by sequence (small cache)
  std::uint32_t counter_ = 0;
  RandomPool random_;                   // the nonces' random halves
};

}  // namespace quicstep::server_testbed::token
