// The ClientHello helpers of censor_packets.hpp, and a check that the built packets are what
// the censor's tests take them for.
#include <gtest/gtest.h>

#include "common/handshake_observer.hpp"
#include "support/client_hello_builder.hpp"

namespace quicstep::censor::testing {

using ByteVec = std::vector<std::uint8_t>;

ByteVec client_hello(const std::string& sni, const std::string& alpn) {
  return test::ClientHelloBuilder().sni(sni).alpn({alpn}).build();
}
ByteVec crypto_frame(const ByteVec& data) { return test::crypto_frame(0, data); }
ByteVec tls_records(const ByteVec& handshake) { return test::tls_records(handshake, 16384); }

}  // namespace quicstep::censor::testing


namespace quicstep::censor {
namespace {

TEST(CensorPackets, ClientHelloHasTheSni) {
  const auto hello = testing::client_hello("www.blocked.test", "h3");
  ASSERT_GT(hello.size(), 40u);
  EXPECT_EQ(hello[0], 1);  // handshake type ClientHello
  const std::string text(hello.begin(), hello.end());
  EXPECT_NE(text.find("www.blocked.test"), std::string::npos);
}

}  // namespace
}  // namespace quicstep::censor
