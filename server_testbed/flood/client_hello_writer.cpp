#include "server_testbed/flood/client_hello_writer.hpp"

#include "common/byte_writer.hpp"

namespace quicstep::server_testbed::flood {

namespace {

using common::ByteWriter;

void random_bytes(ByteWriter& w, std::size_t n, std::mt19937_64& rng) {
  for (std::size_t i = 0; i < n; ++i) w.u8(static_cast<std::uint8_t>(rng()));
}

// Appends `body` with a 16-bit length prefix.
void with_u16_length(ByteWriter& w, const std::vector<std::uint8_t>& body) {
  w.u16(static_cast<std::uint16_t>(body.size())).bytes(body);
}

void extension(ByteWriter& w, std::uint16_t type, const std::vector<std::uint8_t>& data) {
  w.u16(type);
  with_u16_length(w, data);
}

// RFC 9000 §18: id, length, value; integers as varints.
void transport_parameter_int(ByteWriter& w, std::uint64_t id, std::uint64_t value) {
  ByteWriter v;
  v.varint(value);
  w.varint(id).varint(v.size()).bytes(v.buffer());
}

std::vector<std::uint8_t> transport_parameters(common::Bytes scid) {
  ByteWriter w;
  transport_parameter_int(w, 0x01, 30000);     // max_idle_timeout (ms)
  transport_parameter_int(w, 0x04, 1 << 20);   // initial_max_data
  transport_parameter_int(w, 0x05, 1 << 18);   // initial_max_stream_data_bidi_local
  transport_parameter_int(w, 0x06, 1 << 18);   // initial_max_stream_data_bidi_remote
  transport_parameter_int(w, 0x07, 1 << 18);   // initial_max_stream_data_uni
  transport_parameter_int(w, 0x08, 100);       // initial_max_streams_bidi
  transport_parameter_int(w, 0x09, 100);       // initial_max_streams_uni
  w.varint(0x0f).varint(scid.size()).bytes(scid);  // initial_source_connection_id
  return w.take();
}

}  // namespace

std::vector<std::uint8_t> write_client_hello(const ClientHelloSpec& spec, std::mt19937_64& rng) {
  ByteWriter ext;
  if (!spec.server_name.empty()) {
    ByteWriter list;
    list.u8(0).u16(static_cast<std::uint16_t>(spec.server_name.size()));
    list.bytes({reinterpret_cast<const std::uint8_t*>(spec.server_name.data()),
                spec.server_name.size()});
    ByteWriter sni;
    with_u16_length(sni, list.buffer());
    extension(ext, 0x0000, sni.buffer());
  }
  extension(ext, 0x000a, {0x00, 0x04, 0x00, 0x1d, 0x00, 0x17});  // groups: x25519, secp256r1
  extension(ext, 0x000d, {0x00, 0x06, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01});  // sig algs
  extension(ext, 0x0010, {0x00, 0x03, 0x02, 'h', '3'});             // ALPN h3
  extension(ext, 0x002b, {0x02, 0x03, 0x04});                       // supported_versions: 1.3
  extension(ext, 0x002d, {0x01, 0x01});                             // psk modes: psk_dhe_ke
  {
    ByteWriter share;
    share.u16(32 + 4).u16(0x001d).u16(32);
    random_bytes(share, 32, rng);  // any 32 bytes are an X25519 public value
    extension(ext, 0x0033, share.buffer());
  }
  extension(ext, 0x0039, transport_parameters(spec.initial_scid));

  ByteWriter body;
  body.u16(0x0303);
  random_bytes(body, 32, rng);
  body.u8(0);                                                 // legacy_session_id: empty
  body.u16(6).u16(0x1301).u16(0x1302).u16(0x1303);            // cipher suites
  body.u8(1).u8(0);                                           // compression: null
  with_u16_length(body, ext.buffer());

  ByteWriter msg;
  msg.u8(1).u24(static_cast<std::uint32_t>(body.size())).bytes(body.buffer());
  return msg.take();
}

}  // namespace quicstep::server_testbed::flood
