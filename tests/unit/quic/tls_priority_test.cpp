// The priority strings, written out: what each endpoint offers must not change by accident
// when the shared part is edited.
#include "quic/tls_priority.hpp"

#include <gtest/gtest.h>

#include <string_view>

#include "quic/http3.hpp"

namespace quicstep::quic {
namespace {

TEST(TlsPriority, ClientAndServerStrings) {
  EXPECT_EQ(std::string_view(kClientPriority.data()),
            "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
            "+AES-256-GCM:+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
            "+GROUP-SECP384R1");
  EXPECT_EQ(std::string_view(kServerPriority.data()),
            "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
            "+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:"
            "+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1");
}

TEST(Http3, HeaderPointsAtItsText) {
  const std::string_view name = ":path", value = "/bytes/10";
  const nghttp3_nv nv = header(name, value);
  EXPECT_EQ(nv.name, reinterpret_cast<const std::uint8_t*>(name.data()));
  EXPECT_EQ(nv.namelen, name.size());
  EXPECT_EQ(nv.value, reinterpret_cast<const std::uint8_t*>(value.data()));
  EXPECT_EQ(nv.valuelen, value.size());
  EXPECT_EQ(nv.flags, NGHTTP3_NV_FLAG_NONE);
}

}  // namespace
}  // namespace quicstep::quic
