#include "quic/http3.hpp"

#include <cstdint>

namespace quicstep::quic {

nghttp3_nv header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), NGHTTP3_NV_FLAG_NONE};
}

int bind_http3_streams(ngtcp2_conn* conn, nghttp3_conn* h3) {
  std::int64_t ctrl = 0, enc = 0, dec = 0;
  if (ngtcp2_conn_open_uni_stream(conn, &ctrl, nullptr) != 0 ||
      nghttp3_conn_bind_control_stream(h3, ctrl) != 0 ||
      ngtcp2_conn_open_uni_stream(conn, &enc, nullptr) != 0 ||
      ngtcp2_conn_open_uni_stream(conn, &dec, nullptr) != 0 ||
      nghttp3_conn_bind_qpack_streams(h3, enc, dec) != 0) {
    return -1;
  }
  return 0;
}

}  // namespace quicstep::quic
