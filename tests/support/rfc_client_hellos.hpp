// Test support: ClientHello messages published in RFCs, byte for byte.
#pragma once

#include <cstdint>
#include <vector>

#include "support/client_hello_builder.hpp"

namespace quicstep::test {

// RFC 9001 Appendix A.2: the CRYPTO frame of the client Initial (offset 0, 241 bytes of
// ClientHello: SNI "example.com", ALPN "alpn", x25519 key share, QUIC transport parameters).
inline constexpr const char* kRfc9001ClientCryptoFrameHex =
    "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868"
    "04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578"
    "616d706c652e636f6dff01000100000a00080006001d00170018001000070005"
    "04616c706e000500050100000000003300260024001d00209370b2c9caa47fba"
    "baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
    "0d0010000e0403050306030203080408050806002d00020101001c0002400100"
    "3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000"
    "75300901100f088394c8f03e51570806048000ffff";

// The 1,162-byte unprotected payload of that packet: the CRYPTO frame, then 917 PADDING.
inline ByteVector rfc9001_client_initial_payload() {
  ByteVector payload = from_hex(kRfc9001ClientCryptoFrameHex);
  payload.resize(payload.size() + 917, 0x00);
  return payload;
}

// The ClientHello alone (the CRYPTO frame's data: skip 06 00 40f1).
inline ByteVector rfc9001_client_hello() {
  const ByteVector frame = from_hex(kRfc9001ClientCryptoFrameHex);
  return ByteVector(frame.begin() + 4, frame.end());
}

// RFC 8448 §3 (Simple 1-RTT Handshake): the 196-byte ClientHello. SNI "server", no ALPN,
// x25519 key share, TLS 1.3 only.
inline ByteVector rfc8448_client_hello() {
  return from_hex(
      "010000c00303cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef"
      "6283024dece7000006130113031302010000910000000b000900000673657276"
      "6572ff01000100000a00140012001d0017001800190100010101020103010400"
      "230000003300260024001d002099381de560e4bd43d23d8e435a7dbafeb3c06e"
      "51c13cae4d5413691e529aaf2c002b0003020304000d0020001e040305030603"
      "020308040805080604010501060102010402050206020202002d00020101001c"
      "00024001");
}

}  // namespace quicstep::test
