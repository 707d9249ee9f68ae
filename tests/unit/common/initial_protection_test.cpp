#include "common/initial_protection.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "quic_test_vectors.hpp"

namespace quicstep::common {
namespace {

using quicstep::testing::from_hex;
using Vec = std::vector<std::uint8_t>;

template <typename C>
Vec to_vec(const C& c) {
  return Vec(std::begin(c), std::end(c));
}

struct RfcKeys {
  std::uint32_t version;
  std::string_view initial_secret;
  std::string_view client_secret, client_key, client_iv, client_hp;
  std::string_view server_secret, server_key, server_iv, server_hp;
};

const RfcKeys kRfcKeys[] = {
    {kQuicV1, testing::kV1InitialSecret, testing::kV1ClientSecret, testing::kV1ClientKey,
     testing::kV1ClientIv, testing::kV1ClientHp, testing::kV1ServerSecret, testing::kV1ServerKey,
     testing::kV1ServerIv, testing::kV1ServerHp},
    {kQuicV2, testing::kV2InitialSecret, testing::kV2ClientSecret, testing::kV2ClientKey,
     testing::kV2ClientIv, testing::kV2ClientHp, testing::kV2ServerSecret, testing::kV2ServerKey,
     testing::kV2ServerIv, testing::kV2ServerHp},
};

// RFC 9001 A.1 and RFC 9369 A.1.
TEST(InitialKeys, MatchRfcAppendixA1) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  for (const RfcKeys& k : kRfcKeys) {
    SCOPED_TRACE(k.version);
    auto initial = derive_initial_secret(k.version, dcid);
    ASSERT_TRUE(initial.ok());
    EXPECT_EQ(to_vec(*initial), from_hex(k.initial_secret));

    auto client = derive_initial_keys(k.version, dcid, Perspective::client);
    ASSERT_TRUE(client.ok());
    EXPECT_EQ(to_vec(client->secret), from_hex(k.client_secret));
    EXPECT_EQ(to_vec(client->key), from_hex(k.client_key));
    EXPECT_EQ(to_vec(client->iv), from_hex(k.client_iv));
    EXPECT_EQ(to_vec(client->hp), from_hex(k.client_hp));

    auto server = derive_initial_keys(k.version, dcid, Perspective::server);
    ASSERT_TRUE(server.ok());
    EXPECT_EQ(to_vec(server->secret), from_hex(k.server_secret));
    EXPECT_EQ(to_vec(server->key), from_hex(k.server_key));
    EXPECT_EQ(to_vec(server->iv), from_hex(k.server_iv));
    EXPECT_EQ(to_vec(server->hp), from_hex(k.server_hp));
  }
}

TEST(InitialKeys, RejectsUnknownVersionAndLongDcid) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  EXPECT_EQ(derive_initial_keys(0x1a2a3a4a, dcid, Perspective::client).error(),
            Error::unsupported);
  EXPECT_EQ(derive_initial_keys(kQuicVersionNegotiation, dcid, Perspective::client).error(),
            Error::unsupported);
  EXPECT_EQ(derive_initial_keys(kQuicV1, Vec(21, 0), Perspective::client).error(),
            Error::bad_value);
  EXPECT_TRUE(derive_initial_keys(kQuicDraft29, dcid, Perspective::client).ok());
  EXPECT_TRUE(derive_initial_keys(kQuicV1, Vec{}, Perspective::client).ok());
}

TEST(InitialKeys, ExpandLabelLimits) {
  std::array<std::uint8_t, 32> secret{};
  Vec out(16);
  EXPECT_TRUE(hkdf_expand_label(secret, std::string(249, 'x'), out).ok());
  EXPECT_EQ(hkdf_expand_label(secret, std::string(250, 'x'), out).error(), Error::bad_value);
  Vec huge(255 * 32 + 1);
  EXPECT_EQ(hkdf_expand_label(secret, "quic key", huge).error(), Error::bad_value);
}

TEST(InitialHeaderProtection, MasksMatchRfc) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  struct Case {
    std::uint32_t version;
    std::string_view sample, mask;
  };
  for (const Case& c : {Case{kQuicV1, testing::kV1ClientSample, testing::kV1ClientMask},
                        Case{kQuicV2, testing::kV2ClientSample, testing::kV2ClientMask}}) {
    auto keys = derive_initial_keys(c.version, dcid, Perspective::client);
    const Vec sample = from_hex(c.sample);
    const auto mask = header_protection_mask(keys->hp, std::span<const std::uint8_t, 16>(sample));
    EXPECT_EQ(to_vec(mask), from_hex(c.mask));
  }
}

// RFC 9000 §A.3, and the window edges.
TEST(InitialPacketNumber, DecodesRfcExampleAndEdges) {
  EXPECT_EQ(decode_packet_number(0xa82f30ea, 0x9b32, 16), 0xa82f9b32u);
  EXPECT_EQ(decode_packet_number(std::nullopt, 2, 32), 2u);
  EXPECT_EQ(decode_packet_number(std::nullopt, 0xff, 8), 0xffu);
  EXPECT_EQ(decode_packet_number(0xff, 0x00, 8), 0x100u);     // wraps forward
  EXPECT_EQ(decode_packet_number(0x100, 0xff, 8), 0xffu);     // a late packet
  EXPECT_EQ(decode_packet_number(0x17f, 0x00, 8), 0x200u);    // candidate + window
  EXPECT_EQ(decode_packet_number(0x180, 0x00, 8), 0x200u);
  EXPECT_EQ(decode_packet_number(0x17e, 0x00, 8), 0x100u);
  const std::uint64_t max = (std::uint64_t{1} << 62) - 1;
  EXPECT_EQ(decode_packet_number(max - 1, max & 0xffffffff, 32), max);
}

struct RfcPacket {
  std::uint32_t version;
  Perspective sender;
  std::string_view packet, unprotected_header;
  std::uint64_t pn;
  std::size_t pn_length;
};

const RfcPacket kRfcPackets[] = {
    {kQuicV1, Perspective::client, testing::kV1ClientInitial,
     testing::kV1ClientUnprotectedHeader, 2, 4},
    {kQuicV1, Perspective::server, testing::kV1ServerInitial,
     testing::kV1ServerUnprotectedHeader, 1, 2},
    {kQuicV2, Perspective::client, testing::kV2ClientInitial,
     testing::kV2ClientUnprotectedHeader, 2, 4},
    {kQuicV2, Perspective::server, testing::kV2ServerInitial,
     testing::kV2ServerUnprotectedHeader, 1, 2},
};

Vec expected_payload(Perspective sender) {
  return sender == Perspective::client ? testing::rfc_client_payload()
                                       : from_hex(testing::kServerPayload);
}

// RFC 9001 A.2/A.3, RFC 9369 A.2/A.3: full decryption to the published plaintext.
TEST(InitialDecrypt, RfcPacketsDecryptToPublishedPayloads) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  for (const RfcPacket& p : kRfcPackets) {
    SCOPED_TRACE(p.packet.substr(0, 10));
    const Vec pkt = from_hex(p.packet);
    auto h = parse_quic_header(pkt, 0);
    ASSERT_TRUE(h.ok());
    // Both directions use keys from the client's original DCID.
    auto keys = derive_initial_keys(p.version, dcid, p.sender);
    ASSERT_TRUE(keys.ok());
    Vec out(pkt.size());
    auto d = decrypt_initial(*h, *keys, std::nullopt, out);
    ASSERT_TRUE(d.ok()) << to_string(d.error());
    EXPECT_EQ(d->packet_number, p.pn);
    EXPECT_EQ(d->pn_length, p.pn_length);
    EXPECT_EQ(d->reserved_bits, 0);
    EXPECT_EQ(to_vec(d->header), from_hex(p.unprotected_header));
    EXPECT_EQ(d->first_byte, d->header[0]);
    EXPECT_EQ(to_vec(d->payload), expected_payload(p.sender));
  }
}

// draft-ietf-quic-tls-29 Appendix A: secrets, the client mask, the server Initial.
TEST(InitialDraft29, MatchesDraftVectors) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  auto client = derive_initial_keys(kQuicDraft29, dcid, Perspective::client);
  auto server = derive_initial_keys(kQuicDraft29, dcid, Perspective::server);
  ASSERT_TRUE(client.ok() && server.ok());
  EXPECT_EQ(to_vec(client->secret), from_hex(testing::kD29ClientSecret));
  EXPECT_EQ(to_vec(server->secret), from_hex(testing::kD29ServerSecret));
  const Vec sample = from_hex(testing::kD29ClientSample);
  EXPECT_EQ(to_vec(header_protection_mask(client->hp, std::span<const std::uint8_t, 16>(sample))),
            from_hex(testing::kD29ClientMask));

  const Vec pkt = from_hex(testing::kD29ServerInitial);
  auto h = parse_quic_header(pkt, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->version, kQuicDraft29);
  Vec out(pkt.size());
  auto d = decrypt_initial(*h, *server, std::nullopt, out);
  ASSERT_TRUE(d.ok()) << to_string(d.error());
  EXPECT_EQ(d->packet_number, 1u);
  EXPECT_EQ(to_vec(d->header), from_hex(testing::kD29ServerUnprotectedHeader));
  EXPECT_EQ(to_vec(d->payload), from_hex(testing::kD29ServerPayload));

  const Vec scid = from_hex(testing::kRfcServerScid);
  const Vec payload = from_hex(testing::kD29ServerPayload);
  InitialPacketSpec spec;
  spec.scid = scid;
  spec.packet_number = 1;
  spec.pn_length = 2;
  spec.payload = payload;
  auto built = protect_initial(spec, *server);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(*built, pkt);
}

// The client's own DCID is in its packet: a censor needs nothing else.
TEST(InitialDecrypt, ClientInitialWithKeysFromItsOwnDcid) {
  const Vec pkt = from_hex(testing::kV1ClientInitial);
  auto h = parse_quic_header(pkt, 0);
  auto keys = derive_initial_keys(h->version, h->dcid, Perspective::client);
  Vec out(2000);
  auto d = decrypt_initial(*h, *keys, std::nullopt, out);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->payload.size(), testing::kClientPayloadLength);
  EXPECT_EQ(d->payload.data(), out.data() + 22);
}

// protect_initial rebuilds the published packets byte for byte.
TEST(InitialProtect, ReproducesRfcPackets) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  const Vec server_scid = from_hex(testing::kRfcServerScid);
  for (const RfcPacket& p : kRfcPackets) {
    SCOPED_TRACE(p.packet.substr(0, 10));
    auto keys = derive_initial_keys(p.version, dcid, p.sender);
    const Vec payload = expected_payload(p.sender);
    InitialPacketSpec spec;
    if (p.sender == Perspective::client) {
      spec.dcid = dcid;
    } else {
      spec.scid = server_scid;
    }
    spec.packet_number = p.pn;
    spec.pn_length = p.pn_length;
    spec.payload = payload;
    auto built = protect_initial(spec, *keys);
    ASSERT_TRUE(built.ok()) << to_string(built.error());
    EXPECT_EQ(*built, from_hex(p.packet));
  }
}

TEST(InitialDecrypt, TamperingFailsAuthentication) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  const Vec original = from_hex(testing::kV1ClientInitial);
  auto keys = derive_initial_keys(kQuicV1, dcid, Perspective::client);
  Vec out(original.size());
  // The last tag byte, a ciphertext byte, a protected packet-number byte.
  for (std::size_t at : {original.size() - 1, std::size_t{600}, std::size_t{20}}) {
    Vec pkt = original;
    pkt[at] ^= 0x01;
    auto h = parse_quic_header(pkt, 0);
    ASSERT_TRUE(h.ok());
    auto d = decrypt_initial(*h, *keys, std::nullopt, out);
    ASSERT_FALSE(d.ok()) << at;
    EXPECT_EQ(d.error(), Error::decrypt_failed) << at;
  }
  // Right packet, server's keys.
  auto h = parse_quic_header(original, 0);
  auto server = derive_initial_keys(kQuicV1, dcid, Perspective::server);
  EXPECT_EQ(decrypt_initial(*h, *server, std::nullopt, out).error(), Error::decrypt_failed);
}

TEST(InitialDecrypt, TypedErrorsForUnusableInput) {
  const Vec dcid = from_hex(testing::kRfcDcid);
  const Vec pkt = from_hex(testing::kV1ClientInitial);
  auto h = parse_quic_header(pkt, 0);
  auto v1 = derive_initial_keys(kQuicV1, dcid, Perspective::client);
  auto v2 = derive_initial_keys(kQuicV2, dcid, Perspective::client);
  Vec small(pkt.size() - 1), out(pkt.size());
  EXPECT_EQ(decrypt_initial(*h, *v1, std::nullopt, small).error(), Error::limit_exceeded);
  EXPECT_EQ(decrypt_initial(*h, *v2, std::nullopt, out).error(), Error::bad_value);

  const Vec retry_pkt = from_hex(testing::kV1Retry);
  auto retry = parse_quic_header(retry_pkt, 0);
  EXPECT_EQ(decrypt_initial(*retry, *v1, std::nullopt, out).error(), Error::unsupported);
  const Vec short_pkt = from_hex("41 00112233445566778899aabbccddeeff0011");
  auto short_hdr = parse_quic_header(short_pkt, 0);
  EXPECT_EQ(decrypt_initial(*short_hdr, *v1, std::nullopt, out).error(), Error::unsupported);

  // Length 19: one byte short of the header-protection sample.
  Vec tiny = from_hex("c0 00000001 00 00 00 13");
  tiny.resize(tiny.size() + 19, 0xaa);
  auto th = parse_quic_header(tiny, 0);
  ASSERT_TRUE(th.ok());
  EXPECT_EQ(decrypt_initial(*th, *v1, std::nullopt, out).error(), Error::truncated);
  tiny[8] = 0x14;  // Length 20: enough for the sample, then authentication fails
  tiny.push_back(0xaa);
  th = parse_quic_header(tiny, 0);
  ASSERT_TRUE(th.ok());
  EXPECT_EQ(decrypt_initial(*th, *v1, std::nullopt, out).error(), Error::decrypt_failed);
}

// Round trip over versions, every DCID length and every packet-number length.
TEST(InitialProtect, RoundTripAllDcidAndPnLengths) {
  Vec payload(300);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i);
  const Vec token = from_hex("0102030405");
  for (std::uint32_t version : {kQuicV1, kQuicV2, kQuicDraft29}) {
    for (std::size_t dcid_len = 0; dcid_len <= 20; ++dcid_len) {
      for (std::size_t pn_len = 1; pn_len <= 4; ++pn_len) {
        SCOPED_TRACE(::testing::Message() << version << " dcid " << dcid_len << " pn " << pn_len);
        Vec dcid(dcid_len);
        for (std::size_t i = 0; i < dcid_len; ++i) dcid[i] = static_cast<std::uint8_t>(0x30 + i);
        auto keys = derive_initial_keys(version, dcid, Perspective::client);
        ASSERT_TRUE(keys.ok());
        const std::uint64_t largest = 0x12345678 + dcid_len;
        const std::uint64_t pn = largest + 1;
        InitialPacketSpec spec;
        spec.dcid = dcid;
        const Vec scid(8, 0x99);
        spec.scid = scid;
        spec.token = token;
        spec.packet_number = pn;
        spec.pn_length = pn_len;
        spec.payload = Bytes(payload).first(3 + dcid_len * 10);
        auto built = protect_initial(spec, *keys);
        ASSERT_TRUE(built.ok());
        auto h = parse_quic_header(*built, 0);
        ASSERT_TRUE(h.ok());
        EXPECT_EQ(h->version, version);
        EXPECT_EQ(h->type, LongPacketType::initial);
        EXPECT_EQ(to_vec(h->token), token);
        Vec out(built->size());
        auto d = decrypt_initial(*h, *keys, largest, out);
        ASSERT_TRUE(d.ok()) << to_string(d.error());
        EXPECT_EQ(d->packet_number, pn);
        EXPECT_EQ(d->pn_length, pn_len);
        EXPECT_EQ(to_vec(d->payload), to_vec(spec.payload));
      }
    }
  }
}

TEST(InitialProtect, ReservedBitsAndGreasedFixedBitSurvive) {
  const Vec dcid(8, 0x42);
  auto keys = derive_initial_keys(kQuicV2, dcid, Perspective::client);
  const Vec payload(40, 0x00);
  InitialPacketSpec spec;
  spec.dcid = dcid;
  spec.packet_number = 7;
  spec.pn_length = 1;
  spec.reserved_bits = 2;
  spec.fixed_bit = false;
  spec.payload = payload;
  auto built = protect_initial(spec, *keys);
  ASSERT_TRUE(built.ok());
  auto h = parse_quic_header(*built, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->fixed_bit);
  Vec out(built->size());
  auto d = decrypt_initial(*h, *keys, std::nullopt, out);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->reserved_bits, 2);
  EXPECT_EQ(d->packet_number, 7u);
}

TEST(InitialProtect, RejectsBadSpecs) {
  auto keys = derive_initial_keys(kQuicV1, Vec(8, 1), Perspective::client);
  const Vec payload(10, 0);
  InitialPacketSpec spec;
  spec.payload = payload;
  spec.pn_length = 0;
  EXPECT_EQ(protect_initial(spec, *keys).error(), Error::bad_value);
  spec.pn_length = 5;
  EXPECT_EQ(protect_initial(spec, *keys).error(), Error::bad_value);
  spec.pn_length = 1;
  spec.reserved_bits = 4;
  EXPECT_EQ(protect_initial(spec, *keys).error(), Error::bad_value);
  spec.reserved_bits = 0;
  const Vec long_cid(21, 0);
  spec.scid = long_cid;
  EXPECT_EQ(protect_initial(spec, *keys).error(), Error::bad_value);
  spec.scid = {};
  spec.packet_number = std::uint64_t{1} << 62;
  EXPECT_EQ(protect_initial(spec, *keys).error(), Error::bad_value);
  spec.packet_number = 0;
  spec.payload = Bytes(payload).first(2);  // 1 + 2 < 4: no room for the sample
  EXPECT_EQ(protect_initial(spec, *keys).error(), Error::bad_length);
  spec.payload = Bytes(payload).first(3);
  EXPECT_TRUE(protect_initial(spec, *keys).ok());
  InitialKeys unknown = *keys;
  unknown.version = 0x1a2a3a4a;
  EXPECT_EQ(protect_initial(spec, unknown).error(), Error::unsupported);
}

// RFC 9001 A.4 and RFC 9369 A.4.
TEST(InitialRetry, IntegrityTagsMatchRfc) {
  const Vec odcid = from_hex(testing::kRfcDcid);
  for (auto hex : {testing::kV1Retry, testing::kV2Retry}) {
    const Vec pkt = from_hex(hex);
    auto h = parse_quic_header(pkt, 0);
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(verify_retry_integrity(*h, odcid).ok());
    auto tag = retry_integrity_tag(h->version, odcid, Bytes(pkt).first(pkt.size() - 16));
    ASSERT_TRUE(tag.ok());
    EXPECT_EQ(to_vec(*tag), to_vec(h->retry_integrity_tag));
    EXPECT_EQ(verify_retry_integrity(*h, Vec(8, 0)).error(), Error::decrypt_failed);
  }
  const Vec initial_pkt = from_hex(testing::kV1ClientInitial);
  auto initial = parse_quic_header(initial_pkt, 0);
  EXPECT_EQ(verify_retry_integrity(*initial, odcid).error(), Error::unsupported);
  EXPECT_EQ(retry_integrity_tag(kQuicDraft29, odcid, {}).error(), Error::unsupported);
  EXPECT_EQ(retry_integrity_tag(kQuicV1, Vec(21, 0), {}).error(), Error::bad_value);
}

// A coalesced server datagram: the Initial inside it decrypts from its packet view.
TEST(InitialDecrypt, InitialInsideCoalescedDatagram) {
  Vec datagram = from_hex(testing::kV1ServerInitial);
  const Vec trailer = from_hex("41 00112233445566778899aabbccddeeff0011");
  datagram.insert(datagram.end(), trailer.begin(), trailer.end());
  auto keys = derive_initial_keys(kQuicV1, from_hex(testing::kRfcDcid), Perspective::server);
  CoalescedPackets packets(datagram, 0);
  auto h = packets.next();
  ASSERT_TRUE(h.ok());
  Vec out(datagram.size());
  auto d = decrypt_initial(*h, *keys, std::nullopt, out);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(to_vec(d->payload), from_hex(testing::kServerPayload));
  EXPECT_FALSE(packets.done());
}

}  // namespace
}  // namespace quicstep::common
