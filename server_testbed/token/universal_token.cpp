#include "server_testbed/token/universal_token.hpp"

#include <gnutls/crypto.h>
#include <nettle/gcm.h>
#include <nettle/hkdf.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <netinet/in.h>

#include <string.h>

#include <cstring>

namespace quicstep::server_testbed::token {

using common::Error;
using common::Result;

namespace {

constexpr char kSalt[] = "quicstep universal token v1";

void put_u64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<std::uint8_t>(v);
    v >>= 8;
  }
}

std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

// header || family || address [|| rscid_len || rscid]; returns the length written.
std::size_t build_aad(std::uint8_t* aad, const std::uint8_t* header, const ClientAddress& client,
                      TokenType type, std::span<const std::uint8_t> rscid) {
  std::size_t n = 0;
  std::memcpy(aad, header, kHeaderLen);
  n += kHeaderLen;
  aad[n++] = client.family;
  std::memcpy(aad + n, client.bytes.data(), client.size());
  n += client.size();
  if (type == TokenType::retry) {
    aad[n++] = static_cast<std::uint8_t>(rscid.size());
    if (!rscid.empty()) std::memcpy(aad + n, rscid.data(), rscid.size());
    n += rscid.size();
  }
  return n;
}

constexpr std::size_t kMaxAad = kHeaderLen + 1 + 16 + 1 + kMaxCidLen;

}  // namespace

Result<ClientAddress> client_address(const sockaddr_storage& addr) {
  ClientAddress out;
  if (addr.ss_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, &addr, sizeof(v4));
    out.family = 4;
    std::memcpy(out.bytes.data(), &v4.sin_addr, 4);
    return out;
  }
  if (addr.ss_family == AF_INET6) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, &addr, sizeof(v6));
    out.family = 6;
    std::memcpy(out.bytes.data(), &v6.sin6_addr, 16);
    return out;
  }
  return Error::unsupported;
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::valid: return "valid";
    case Verdict::malformed: return "malformed";
    case Verdict::unknown_key: return "unknown_key";
    case Verdict::invalid: return "invalid";
    case Verdict::expired: return "expired";
  }
  return "?";
}

Result<TokenCodec> TokenCodec::create(std::span<const std::uint8_t> master,
                                      const TokenConfig& config) {
  if (master.size() < kMasterKeyMin) return Error::bad_length;
  if (config.key_period_ms == 0) return Error::bad_value;
  return TokenCodec(master, config);
}

TokenCodec::TokenCodec(std::span<const std::uint8_t> master, const TokenConfig& config)
    : config_(config) {
  hmac_sha256_ctx ctx{};
  hmac_sha256_set_key(&ctx, sizeof(kSalt) - 1, reinterpret_cast<const std::uint8_t*>(kSalt));
  hkdf_extract(&ctx, reinterpret_cast<nettle_hash_update_func*>(&hmac_sha256_update),
               reinterpret_cast<nettle_hash_digest_func*>(&hmac_sha256_digest),
               SHA256_DIGEST_SIZE, master.size(), master.data(), prk_.data());
  // The counter half of the nonce starts at a random value so that two codecs (gate,
  // workers, restarts) are unlikely to walk the same counters; uniqueness does not depend
  // on it: the 8 random octets per token do that across codecs.
  gnutls_rnd(GNUTLS_RND_NONCE, &counter_, sizeof(counter_));
}

gcm_aes128_ctx& TokenCodec::gcm_for(std::uint64_t seq) {
  for (auto& slot : keys_) {
    if (slot.seq == seq) return slot.gcm;
  }
  KeySlot* victim = &keys_[0];  // the oldest sequence goes
  for (auto& slot : keys_) {
    if (slot.seq == UINT64_MAX || (victim->seq != UINT64_MAX && slot.seq < victim->seq)) {
      victim = &slot;
    }
  }
  // info = "key " || seq (8 octets, big endian)
  std::uint8_t info[12] = {'k', 'e', 'y', ' '};
  put_u64(info + 4, seq);
  std::array<std::uint8_t, 16> key{};
  hmac_sha256_ctx ctx{};
  hmac_sha256_set_key(&ctx, prk_.size(), prk_.data());
  hkdf_expand(&ctx, reinterpret_cast<nettle_hash_update_func*>(&hmac_sha256_update),
              reinterpret_cast<nettle_hash_digest_func*>(&hmac_sha256_digest),
              SHA256_DIGEST_SIZE, sizeof(info), info, key.size(), key.data());
  gcm_aes128_set_key(&victim->gcm, key.data());
  explicit_bzero(key.data(), key.size());
  victim->seq = seq;
  return victim->gcm;
}

std::size_t TokenCodec::issue(TokenType type, std::span<std::uint8_t> out,
                              const ClientAddress& client, std::span<const std::uint8_t> odcid,
                              std::span<const std::uint8_t> rscid, std::uint64_t now_ms) {
  if (odcid.size() > kMaxCidLen || rscid.size() > kMaxCidLen || out.size() < kMaxTokenLen ||
      (client.family != 4 && client.family != 6)) {
    return 0;
  }
  const std::uint64_t seq = now_ms / config_.key_period_ms;
  std::uint8_t* p = out.data();
  p[0] = static_cast<std::uint8_t>(type);
  p[1] = static_cast<std::uint8_t>(seq);
  const std::uint32_t count = counter_++;
  p[2] = static_cast<std::uint8_t>(count >> 24);
  p[3] = static_cast<std::uint8_t>(count >> 16);
  p[4] = static_cast<std::uint8_t>(count >> 8);
  p[5] = static_cast<std::uint8_t>(count);
  random_.fill(p + 6, 8);

  std::uint8_t plain[8 + 1 + kMaxCidLen];
  std::size_t plain_len = 8;
  put_u64(plain, now_ms);
  if (type == TokenType::retry) {
    plain[plain_len++] = static_cast<std::uint8_t>(odcid.size());
    if (!odcid.empty()) std::memcpy(plain + plain_len, odcid.data(), odcid.size());
    plain_len += odcid.size();
  }
  std::uint8_t aad[kMaxAad];
  const std::size_t aad_len = build_aad(aad, p, client, type, rscid);

  gcm_aes128_ctx& gcm = gcm_for(seq);
  gcm_aes128_set_iv(&gcm, kNonceLen, p + 2);
  gcm_aes128_update(&gcm, aad_len, aad);
  gcm_aes128_encrypt(&gcm, plain_len, p + kHeaderLen, plain);
  gcm_aes128_digest(&gcm, kTagLen, p + kHeaderLen + plain_len);
  return kHeaderLen + plain_len + kTagLen;
}

std::size_t TokenCodec::issue_retry(std::span<std::uint8_t> out, const ClientAddress& client,
                                    std::span<const std::uint8_t> odcid,
                                    std::span<const std::uint8_t> rscid, std::uint64_t now_ms) {
  return issue(TokenType::retry, out, client, odcid, rscid, now_ms);
}

std::size_t TokenCodec::issue_new_token(std::span<std::uint8_t> out, const ClientAddress& client,
                                        std::uint64_t now_ms) {
  return issue(TokenType::new_token, out, client, {}, {}, now_ms);
}

Verdict TokenCodec::verify(std::span<const std::uint8_t> token, const ClientAddress& client,
                           std::span<const std::uint8_t> dcid, std::uint64_t now_ms,
                           VerifiedToken* out) {
  if (token.size() < kHeaderLen + 8 + kTagLen) return Verdict::malformed;
  const std::uint8_t* p = token.data();
  TokenType type;
  if (p[0] == static_cast<std::uint8_t>(TokenType::retry)) {
    type = TokenType::retry;
    if (token.size() < kHeaderLen + 9 + kTagLen || token.size() > kMaxTokenLen) {
      return Verdict::malformed;
    }
    if (dcid.size() > kMaxCidLen) return Verdict::malformed;
  } else if (p[0] == static_cast<std::uint8_t>(TokenType::new_token)) {
    type = TokenType::new_token;
    if (token.size() != kHeaderLen + 8 + kTagLen) return Verdict::malformed;
  } else {
    return Verdict::malformed;
  }
  if (client.family != 4 && client.family != 6) return Verdict::malformed;

  // The newest sequence at or before now whose low octet is the key id, within grace.
  const std::uint64_t now_seq = now_ms / config_.key_period_ms;
  std::uint64_t seq = UINT64_MAX;
  for (std::uint64_t back = 0; back <= config_.grace_periods && back <= now_seq; ++back) {
    if (static_cast<std::uint8_t>(now_seq - back) == p[1]) {
      seq = now_seq - back;
      break;
    }
  }
  if (seq == UINT64_MAX) return Verdict::unknown_key;

  const std::size_t cipher_len = token.size() - kHeaderLen - kTagLen;
  std::uint8_t plain[8 + 1 + kMaxCidLen];
  std::uint8_t aad[kMaxAad];
  const std::size_t aad_len = build_aad(aad, p, client, type, dcid);
  gcm_aes128_ctx& gcm = gcm_for(seq);
  gcm_aes128_set_iv(&gcm, kNonceLen, p + 2);
  gcm_aes128_update(&gcm, aad_len, aad);
  gcm_aes128_decrypt(&gcm, cipher_len, plain, p + kHeaderLen);
  std::uint8_t tag[kTagLen];
  gcm_aes128_digest(&gcm, kTagLen, tag);
  if (!memeql_sec(tag, p + kHeaderLen + cipher_len, kTagLen)) return Verdict::invalid;

  VerifiedToken v;
  v.type = type;
  v.issued_ms = get_u64(plain);
  std::memcpy(v.nonce.data(), p + 2, kNonceLen);
  if (type == TokenType::retry) {
    v.odcid_len = plain[8];
    if (v.odcid_len > kMaxCidLen || 9 + v.odcid_len != cipher_len) return Verdict::malformed;
    if (v.odcid_len > 0) std::memcpy(v.odcid.data(), plain + 9, v.odcid_len);
  }
  if (v.issued_ms > now_ms + config_.max_clock_skew_ms) return Verdict::invalid;
  // A token must have been issued under the key sequence it names.
  if (v.issued_ms / config_.key_period_ms != seq) return Verdict::invalid;
  if (out) *out = v;
  const std::uint64_t lifetime =
      type == TokenType::retry ? config_.retry_lifetime_ms : config_.new_token_lifetime_ms;
  if (now_ms > v.issued_ms && now_ms - v.issued_ms > lifetime) return Verdict::expired;
  return Verdict::valid;
}

}  // namespace quicstep::server_testbed::token
