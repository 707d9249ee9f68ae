#include "common/initial_protection.hpp"

#include <nettle/aes.h>
#include <nettle/gcm.h>
#include <nettle/hkdf.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include <algorithm>
#include <cstring>

#include "common/byte_writer.hpp"

namespace quicstep::common {
namespace {

constexpr std::size_t kTagLength = GCM_DIGEST_SIZE;  // 16
constexpr std::size_t kSampleLength = 16;
constexpr std::size_t kSampleOffset = 4;  // from pn_offset (RFC 9001 §5.4.2)

// nettle's HKDF takes the MAC through void* callbacks. These wrappers have exactly the
// callback types, so no function pointer is ever called through a cast.
void hmac_update(void* ctx, std::size_t length, const std::uint8_t* data) {
  hmac_sha256_update(static_cast<hmac_sha256_ctx*>(ctx), length, data);
}
void hmac_digest(void* ctx, std::size_t length, std::uint8_t* out) {
  hmac_sha256_digest(static_cast<hmac_sha256_ctx*>(ctx), length, out);
}

// nonce = iv XOR the packet number, left-padded to the IV size (RFC 9001 §5.3).
std::array<std::uint8_t, 12> make_nonce(const std::array<std::uint8_t, 12>& iv,
                                        std::uint64_t pn) {
  std::array<std::uint8_t, 12> nonce = iv;
  for (std::size_t i = 0; i < 8; ++i) {
    nonce[11 - i] ^= static_cast<std::uint8_t>(pn >> (8 * i));
  }
  return nonce;
}

// Applies or removes header protection in place on buf, a whole long-header packet whose
// packet number starts at pn_offset. Returns the packet-number length read from the
// unprotected first byte. Precondition: pn_offset + 4 + 16 <= buf.size().
std::size_t toggle_header_protection(std::span<std::uint8_t> buf, std::size_t pn_offset,
                                     const std::array<std::uint8_t, 16>& hp, bool protecting) {
  const auto mask =
      header_protection_mask(hp, buf.subspan(pn_offset + kSampleOffset).first<kSampleLength>());
  // When protecting, the packet-number length is read before masking; when removing, after.
  std::size_t pn_length = (buf[0] & 0x03) + 1;
  buf[0] ^= mask[0] & 0x0f;  // long header: the low 4 bits
  if (!protecting) pn_length = (buf[0] & 0x03) + 1;
  for (std::size_t i = 0; i < pn_length; ++i) buf[pn_offset + i] ^= mask[1 + i];
  return pn_length;
}

}  // namespace

Status hkdf_expand_label(Bytes secret, std::string_view label, std::span<std::uint8_t> out) {
  constexpr std::string_view kPrefix = "tls13 ";
  if (label.size() > 255 - kPrefix.size() || out.size() > 255 * SHA256_DIGEST_SIZE) {
    return Error::bad_value;
  }
  // struct { uint16 length; opaque label<7..255> = "tls13 " + label; opaque context<0..255>; }
  std::array<std::uint8_t, 2 + 1 + 255 + 1> info{};
  std::size_t n = 0;
  info[n++] = static_cast<std::uint8_t>(out.size() >> 8);
  info[n++] = static_cast<std::uint8_t>(out.size());
  info[n++] = static_cast<std::uint8_t>(kPrefix.size() + label.size());
  std::memcpy(&info[n], kPrefix.data(), kPrefix.size());
  n += kPrefix.size();
  if (!label.empty()) std::memcpy(&info[n], label.data(), label.size());
  n += label.size();
  info[n++] = 0;  // empty context

  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, secret.size(), secret.data());
  hkdf_expand(&ctx, hmac_update, hmac_digest, SHA256_DIGEST_SIZE, n, info.data(), out.size(),
              out.data());
  return {};
}

Result<std::array<std::uint8_t, 32>> derive_initial_secret(std::uint32_t version, Bytes dcid) {
  const QuicVersionInfo* info = find_quic_version(version);
  if (info == nullptr) return Error::unsupported;
  if (dcid.size() > kMaxCidLength) return Error::bad_value;
  std::array<std::uint8_t, 32> secret{};
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, info->initial_salt.size(), info->initial_salt.data());
  hkdf_extract(&ctx, hmac_update, hmac_digest, SHA256_DIGEST_SIZE, dcid.size(), dcid.data(),
               secret.data());
  return secret;
}

Result<InitialKeys> derive_initial_keys(std::uint32_t version, Bytes dcid, Perspective sender) {
  auto initial_secret = derive_initial_secret(version, dcid);
  if (!initial_secret) return initial_secret.error();
  const QuicVersionInfo* info = find_quic_version(version);
  InitialKeys keys;
  keys.version = version;
  keys.sender = sender;
  const std::string_view side = sender == Perspective::client ? "client in" : "server in";
  // The labels are constants well inside hkdf_expand_label's limits: these cannot fail.
  (void)hkdf_expand_label(*initial_secret, side, keys.secret);
  (void)hkdf_expand_label(keys.secret, info->key_label, keys.key);
  (void)hkdf_expand_label(keys.secret, info->iv_label, keys.iv);
  (void)hkdf_expand_label(keys.secret, info->hp_label, keys.hp);
  return keys;
}

std::array<std::uint8_t, 5> header_protection_mask(const std::array<std::uint8_t, 16>& hp,
                                                   std::span<const std::uint8_t, 16> sample) {
  aes128_ctx aes;
  aes128_set_encrypt_key(&aes, hp.data());
  std::array<std::uint8_t, 16> block{};
  aes128_encrypt(&aes, block.size(), block.data(), sample.data());
  std::array<std::uint8_t, 5> mask{};
  std::copy_n(block.begin(), mask.size(), mask.begin());
  return mask;
}

Result<DecryptedPacket> decrypt_initial(const QuicHeader& header, const InitialKeys& keys,
                                        std::optional<std::uint64_t> largest_pn,
                                        std::span<std::uint8_t> out) {
  if (header.kind != QuicPacketKind::long_header || header.type != LongPacketType::initial) {
    return Error::unsupported;
  }
  if (keys.version != header.version) return Error::bad_value;
  const Bytes packet = header.packet;
  if (out.size() < packet.size()) return Error::limit_exceeded;
  const std::size_t pn_offset = header.pn_offset;
  if (packet.size() < pn_offset + kSampleOffset + kSampleLength) return Error::truncated;

  std::span<std::uint8_t> buf = out.first(packet.size());
  std::copy(packet.begin(), packet.end(), buf.begin());
  const std::size_t pn_length = toggle_header_protection(buf, pn_offset, keys.hp, false);
  std::uint64_t truncated_pn = 0;
  for (std::size_t i = 0; i < pn_length; ++i) truncated_pn = (truncated_pn << 8) | buf[pn_offset + i];

  DecryptedPacket result;
  result.pn_length = pn_length;
  result.packet_number =
      decode_packet_number(largest_pn, truncated_pn, static_cast<unsigned>(8 * pn_length));
  result.first_byte = buf[0];
  result.reserved_bits = (buf[0] >> 2) & 0x03;

  // The sample check above leaves at least 16 bytes after a packet number of up to 4.
  const std::size_t header_length = pn_offset + pn_length;
  const std::size_t ciphertext_length = buf.size() - header_length - kTagLength;
  std::uint8_t* ciphertext = buf.data() + header_length;
  const auto nonce = make_nonce(keys.iv, result.packet_number);

  gcm_aes128_ctx gcm;
  gcm_aes128_set_key(&gcm, keys.key.data());
  gcm_aes128_set_iv(&gcm, nonce.size(), nonce.data());
  gcm_aes128_update(&gcm, header_length, buf.data());
  gcm_aes128_decrypt(&gcm, ciphertext_length, ciphertext, ciphertext);  // in place
  std::array<std::uint8_t, kTagLength> tag{};
  gcm_aes128_digest(&gcm, tag.size(), tag.data());
  if (memeql_sec(tag.data(), ciphertext + ciphertext_length, kTagLength) == 0) {
    return Error::decrypt_failed;
  }
  result.header = Bytes(buf.data(), header_length);
  result.payload = Bytes(ciphertext, ciphertext_length);
  return result;
}

Result<std::vector<std::uint8_t>> protect_initial(const InitialPacketSpec& spec,
                                                  const InitialKeys& keys) {
  const auto type_bits = long_type_bits(keys.version, LongPacketType::initial);
  if (!type_bits) return Error::unsupported;
  if (spec.dcid.size() > kMaxCidLength || spec.scid.size() > kMaxCidLength ||
      spec.pn_length < 1 || spec.pn_length > 4 || spec.reserved_bits > 3 ||
      spec.packet_number >= (std::uint64_t{1} << 62)) {
    return Error::bad_value;
  }
  if (spec.pn_length + spec.payload.size() < kSampleOffset) return Error::bad_length;

  const std::uint8_t first = static_cast<std::uint8_t>(
      0x80 | (spec.fixed_bit ? 0x40 : 0x00) | (*type_bits << 4) | (spec.reserved_bits << 2) |
      (spec.pn_length - 1));
  ByteWriter w;
  w.u8(first).u32(keys.version);
  w.u8(static_cast<std::uint8_t>(spec.dcid.size())).bytes(spec.dcid);
  w.u8(static_cast<std::uint8_t>(spec.scid.size())).bytes(spec.scid);
  w.varint(spec.token.size()).bytes(spec.token);
  w.varint(spec.pn_length + spec.payload.size() + kTagLength);
  const std::size_t pn_offset = w.size();
  for (std::size_t i = spec.pn_length; i-- > 0;) {  // the low bytes, big-endian
    w.u8(static_cast<std::uint8_t>(spec.packet_number >> (8 * i)));
  }
  const std::size_t header_length = w.size();
  std::vector<std::uint8_t> buf = w.take();
  buf.resize(header_length + spec.payload.size() + kTagLength);

  const auto nonce = make_nonce(keys.iv, spec.packet_number);
  gcm_aes128_ctx gcm;
  gcm_aes128_set_key(&gcm, keys.key.data());
  gcm_aes128_set_iv(&gcm, nonce.size(), nonce.data());
  gcm_aes128_update(&gcm, header_length, buf.data());
  if (!spec.payload.empty()) {
    gcm_aes128_encrypt(&gcm, spec.payload.size(), buf.data() + header_length, spec.payload.data());
  }
  gcm_aes128_digest(&gcm, kTagLength, buf.data() + header_length + spec.payload.size());
  toggle_header_protection(buf, pn_offset, keys.hp, true);
  return buf;
}

Result<std::array<std::uint8_t, 16>> retry_integrity_tag(std::uint32_t version,
                                                         Bytes original_dcid,
                                                         Bytes retry_without_tag) {
  const QuicVersionInfo* info = find_quic_version(version);
  if (info == nullptr || !info->has_retry_keys) return Error::unsupported;
  if (original_dcid.size() > kMaxCidLength) return Error::bad_value;
  // The Retry pseudo-packet (RFC 9001 §5.8): ODCID length, ODCID, the Retry without its tag.
  // GCM takes the AAD in one piece, hence the copy; Retry is not on the forwarding path.
  std::vector<std::uint8_t> pseudo;
  pseudo.reserve(1 + original_dcid.size() + retry_without_tag.size());
  pseudo.push_back(static_cast<std::uint8_t>(original_dcid.size()));
  pseudo.insert(pseudo.end(), original_dcid.begin(), original_dcid.end());
  pseudo.insert(pseudo.end(), retry_without_tag.begin(), retry_without_tag.end());

  gcm_aes128_ctx gcm;
  gcm_aes128_set_key(&gcm, info->retry_key.data());
  gcm_aes128_set_iv(&gcm, info->retry_nonce.size(), info->retry_nonce.data());
  gcm_aes128_update(&gcm, pseudo.size(), pseudo.data());
  std::array<std::uint8_t, 16> tag{};
  gcm_aes128_digest(&gcm, tag.size(), tag.data());
  return tag;
}

Status verify_retry_integrity(const QuicHeader& retry, Bytes original_dcid) {
  if (retry.kind != QuicPacketKind::long_header || retry.type != LongPacketType::retry ||
      retry.retry_integrity_tag.size() != kTagLength) {
    return Error::unsupported;
  }
  const Bytes without_tag = retry.packet.first(retry.packet.size() - kTagLength);
  auto tag = retry_integrity_tag(retry.version, original_dcid, without_tag);
  if (!tag) return tag.error();
  if (memeql_sec(tag->data(), retry.retry_integrity_tag.data(), kTagLength) == 0) {
    return Error::decrypt_failed;
  }
  return {};
}

}  // namespace quicstep::common
