// HTTP/3 pieces shared by the clients and the server (nghttp3 0.8.0).
#pragma once

#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>

#include <string_view>

namespace quicstep::quic {

// A header field pointing at `name` and `value` (not copied: they must outlive the call that
// submits it).
nghttp3_nv header(std::string_view name, std::string_view value);

// Opens the control stream and the QPACK encoder and decoder streams on `conn` and binds
// them to `h3` (RFC 9114 §6.2). Returns 0, or -1 when ngtcp2 or nghttp3 refuse (the peer
// allows fewer than 3 unidirectional streams).
int bind_http3_streams(ngtcp2_conn* conn, nghttp3_conn* h3);

}  // namespace quicstep::quic
