// WireGuard's fingerprint as the censor reads it, and --block-wireguard in the core: a flow
// carrying a handshake message is dropped both ways on any port, its triple stays blocked,
// a rekey on a flow first seen mid-session is caught, and nothing else is touched.
#include "lab/censor/wireguard_fingerprint.hpp"

#include <gtest/gtest.h>

#include "censor_packets.hpp"
#include "lab/censor/censor_core.hpp"

namespace quicstep::censor {
namespace {

using namespace testing;

// A WireGuard message of `type` and `size` bytes: the type, three zero bytes, then bytes
// that look random (as its keys, nonces and ciphertext do).
ByteVec wg_payload(std::uint8_t type, std::size_t size) {
  ByteVec p(size);
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<std::uint8_t>(i * 131 + 17);
  if (size > 0) p[0] = type;
  for (std::size_t i = 1; i < 4 && i < size; ++i) p[i] = 0;
  return p;
}

ByteVec wg_packet(std::uint8_t type, std::size_t size, bool from_client = true,
                  std::uint16_t server_port = 51820, std::uint16_t client_port = 41000) {
  PacketBuilder b;
  if (from_client) {
    b.ipv4(kClient4, kServer4).udp(client_port, server_port);
  } else {
    b.ipv4(kServer4, kClient4).udp(server_port, client_port);
  }
  return b.payload(wg_payload(type, size)).build();
}

TEST(WireGuardFingerprint, TellsEachMessageByTypeReservedBytesAndSize) {
  EXPECT_EQ(classify_wireguard(wg_payload(1, 148)), WireGuardMessage::initiation);
  EXPECT_EQ(classify_wireguard(wg_payload(2, 92)), WireGuardMessage::response);
  EXPECT_EQ(classify_wireguard(wg_payload(3, 64)), WireGuardMessage::cookie_reply);
  EXPECT_EQ(classify_wireguard(wg_payload(4, 32)), WireGuardMessage::transport);  // keepalive
  EXPECT_EQ(classify_wireguard(wg_payload(4, 1456)), WireGuardMessage::transport);
  EXPECT_TRUE(is_wireguard_handshake(WireGuardMessage::initiation));
  EXPECT_TRUE(is_wireguard_handshake(WireGuardMessage::response));
  EXPECT_FALSE(is_wireguard_handshake(WireGuardMessage::transport));
  // Near misses are not WireGuard.
  EXPECT_EQ(classify_wireguard(wg_payload(1, 147)), WireGuardMessage::none);
  EXPECT_EQ(classify_wireguard(wg_payload(1, 149)), WireGuardMessage::none);
  EXPECT_EQ(classify_wireguard(wg_payload(2, 148)), WireGuardMessage::none);
  EXPECT_EQ(classify_wireguard(wg_payload(4, 40)), WireGuardMessage::none);
  EXPECT_EQ(classify_wireguard(wg_payload(5, 148)), WireGuardMessage::none);
  ByteVec reserved = wg_payload(1, 148);
  reserved[2] = 1;
  EXPECT_EQ(classify_wireguard(reserved), WireGuardMessage::none);
  // Every truncation of an initiation is refused without reading past it.
  const ByteVec init = wg_payload(1, 148);
  for (std::size_t n = 0; n < init.size(); ++n) {
    EXPECT_EQ(classify_wireguard(common::Bytes(init.data(), n)), WireGuardMessage::none) << n;
  }
}

CensorCore wg_censor(bool block) {
  CensorConfig config;
  config.block_wireguard = block;
  Blocklist list;
  list.load("blocked.test\n");
  return CensorCore(config, std::move(list), 1);
}

TEST(WireGuardFingerprint, TheCensorBlocksAHandshakingFlowBothWaysOnAnyPort) {
  for (const std::uint16_t port : {51820, 443, 4500}) {
    SCOPED_TRACE(port);
    auto core = wg_censor(true);
    EXPECT_EQ(core.decide(wg_packet(1, 148, true, port), at_s(0)).action, Action::drop);
    EXPECT_EQ(core.decide(wg_packet(2, 92, false, port), at_s(0.01)).action, Action::drop);
    EXPECT_EQ(core.decide(wg_packet(4, 128, true, port), at_s(0.02)).action, Action::drop);
    EXPECT_EQ(core.counters().wireguard_blocks, 1u);
    const auto log = core.take_decisions();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].rule, Rule::wireguard);
    EXPECT_EQ(to_string(log[0].rule), "wireguard");
    // The triple stays blocked: a new flow from another client port to it is dropped.
    EXPECT_EQ(core.decide(wg_packet(4, 64, true, port, 41001), at_s(1)).action, Action::drop);
    EXPECT_EQ(core.counters().residual_blocks, 1u);
  }
}

TEST(WireGuardFingerprint, ASessionSeenMidwayIsCaughtAtItsNextHandshake) {
  auto core = wg_censor(true);
  // Transport packets and keepalives alone are not matched (censors differ here; this one
  // keys on the handshake, as most reports say).
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(core.decide(wg_packet(4, 32 + 16 * (i % 8)), at_s(i * 0.1)).action, Action::pass);
  }
  // WireGuard rekeys every two minutes on the same flow.
  EXPECT_EQ(core.decide(wg_packet(1, 148), at_s(120)).action, Action::drop);
  EXPECT_EQ(core.decide(wg_packet(4, 64), at_s(120.1)).action, Action::drop);
}

TEST(WireGuardFingerprint, OffByDefaultAndNothingElseIsTouched) {
  auto off = wg_censor(false);
  EXPECT_FALSE(CensorConfig{}.block_wireguard);
  EXPECT_EQ(off.decide(wg_packet(1, 148), at_s(0)).action, Action::pass);
  EXPECT_EQ(off.decide(wg_packet(2, 92, false), at_s(0.1)).action, Action::pass);
  auto on = wg_censor(true);
  // QUIC (an Initial of an allowed name, short headers) and DNS pass as before.
  EXPECT_EQ(on.decide(quic_initial("open.test", 40000), at_s(0)).action, Action::pass);
  EXPECT_EQ(on.decide(quic_short(40000), at_s(0.1)).action, Action::pass);
  EXPECT_EQ(on.decide(dns_query("open.test", 1), at_s(0.2)).action, Action::pass);
  // A 148-byte QUIC-port datagram that is not WireGuard-shaped passes.
  ByteVec not_wg = wg_payload(0x41, 148);
  EXPECT_EQ(on.decide(PacketBuilder().ipv4(kClient4, kServer4).udp(40001, 443).payload(not_wg).build(),
                      at_s(0.3)).action,
            Action::pass);
  EXPECT_EQ(on.counters().wireguard_blocks, 0u);
}

}  // namespace
}  // namespace quicstep::censor
