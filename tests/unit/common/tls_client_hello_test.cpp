#include "common/tls_client_hello.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/client_hello_builder.hpp"
#include "support/rfc_client_hellos.hpp"

namespace quicstep::common {
namespace {

using test::ByteVector;
using test::ClientHelloBuilder;

std::string text(Bytes b) { return std::string(b.begin(), b.end()); }

Error parse_error(const ByteVector& message) {
  auto hello = parse_client_hello(message);
  EXPECT_FALSE(hello.ok());
  return hello.ok() ? Error::bad_value : hello.error();
}

TEST(ClientHello, Rfc9001ClientInitial) {
  const ByteVector message = test::rfc9001_client_hello();
  auto hello = parse_client_hello(message);
  ASSERT_TRUE(hello.ok()) << to_string(hello.error());
  EXPECT_EQ(hello->message_length, message.size());
  EXPECT_EQ(hello->legacy_version, 0x0303);
  EXPECT_EQ(hello->random[0], 0xeb);
  EXPECT_TRUE(hello->session_id.empty());
  EXPECT_EQ(hello->cipher_suite_count(), 2u);  // 1301, 1302
  EXPECT_TRUE(hello->has_server_name);
  EXPECT_EQ(hello->server_name(), "example.com");
  ASSERT_EQ(hello->alpn.size(), 1u);
  EXPECT_EQ(text(hello->alpn[0]), "alpn");
  ASSERT_EQ(hello->supported_versions.size(), 1u);
  EXPECT_EQ(hello->supported_versions[0], 0x0304);
  EXPECT_TRUE(hello->offers_tls13());
  ASSERT_EQ(hello->key_shares.size(), 1u);
  EXPECT_EQ(hello->key_shares[0].group, 0x001d);
  EXPECT_EQ(hello->key_shares[0].key_exchange.size(), 32u);
  EXPECT_TRUE(hello->has_quic_transport_parameters);
  EXPECT_EQ(hello->quic_transport_parameters.size(), 0x32u);
  EXPECT_FALSE(hello->has_ech);
  EXPECT_EQ(hello->extension_types.size(), 11u);
}

TEST(ClientHello, Rfc8448SimpleHandshake) {
  auto hello = parse_client_hello(test::rfc8448_client_hello());
  ASSERT_TRUE(hello.ok()) << to_string(hello.error());
  EXPECT_EQ(hello->server_name(), "server");
  EXPECT_TRUE(hello->alpn.empty());
  EXPECT_FALSE(hello->has_quic_transport_parameters);
  EXPECT_EQ(hello->cipher_suite_count(), 3u);
  ASSERT_EQ(hello->key_shares.size(), 1u);
  EXPECT_EQ(hello->key_shares[0].group, 0x001d);
}

TEST(ClientHello, EveryPrefixIsIncompleteAndNeededLengthIsExact) {
  for (const ByteVector& message :
       {test::rfc9001_client_hello(), test::rfc8448_client_hello(),
        ClientHelloBuilder::chrome_quic("www.example.com").build()}) {
    for (std::size_t n = 0; n < message.size(); ++n) {
      const Bytes prefix(message.data(), n);
      auto hello = parse_client_hello(prefix);
      ASSERT_FALSE(hello.ok()) << n;
      ASSERT_EQ(hello.error(), Error::incomplete) << n;
      auto needed = client_hello_needed_length(prefix);
      ASSERT_TRUE(needed.ok());
      EXPECT_EQ(*needed, n < 4 ? 4 : message.size()) << n;
    }
    EXPECT_TRUE(parse_client_hello(message).ok());
  }
}

TEST(ClientHello, TrailingBytesAfterTheMessageAreIgnored) {
  ByteVector message = test::rfc8448_client_hello();
  const std::size_t length = message.size();
  message.push_back(0x14);
  auto hello = parse_client_hello(message);
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->message_length, length);
}

TEST(ClientHello, EveryShortenedMessageLengthIsATypedError) {
  // Shrink the u24 length so the body ends early at every byte: never a crash, never ok
  // past the last field, and never incomplete (the message is complete by its header).
  const ByteVector message = ClientHelloBuilder::chrome_tcp("shop.example.net").build();
  for (std::size_t body = 0; body + 4 < message.size(); ++body) {
    ByteVector cut(message.begin(), message.begin() + 4 + static_cast<std::ptrdiff_t>(body));
    cut[1] = static_cast<std::uint8_t>(body >> 16);
    cut[2] = static_cast<std::uint8_t>(body >> 8);
    cut[3] = static_cast<std::uint8_t>(body);
    auto hello = parse_client_hello(cut);
    if (hello.ok()) continue;  // a cut exactly after compression_methods is a valid hello
    EXPECT_NE(hello.error(), Error::incomplete) << body;
  }
}

TEST(ClientHello, ChromeLikeQuicHelloWithPostQuantumKeyShare) {
  const ByteVector message = ClientHelloBuilder::chrome_quic("Mail.Example.COM").build();
  EXPECT_GT(message.size(), 1700u);
  auto hello = parse_client_hello(message);
  ASSERT_TRUE(hello.ok()) << to_string(hello.error());
  EXPECT_EQ(hello->server_name(), "mail.example.com");
  ASSERT_EQ(hello->alpn.size(), 1u);
  EXPECT_EQ(text(hello->alpn[0]), "h3");
  ASSERT_EQ(hello->key_shares.size(), 3u);
  EXPECT_EQ(hello->key_shares[1].group, test::kGroupX25519MLKEM768);
  EXPECT_EQ(hello->key_shares[1].key_exchange.size(), test::kX25519MLKEM768ShareLength);
  EXPECT_TRUE(hello->has_ech);
  EXPECT_TRUE(hello->has_quic_transport_parameters);
  EXPECT_TRUE(hello->offers_tls13());
}

TEST(ClientHello, ExtensionOrderDoesNotMatter) {
  for (std::uint32_t seed = 1; seed < 40; ++seed) {
    const ByteVector message = ClientHelloBuilder::chrome_tcp("a.b.example").shuffle_extensions(seed).build();
    auto hello = parse_client_hello(message);  // views into message
    ASSERT_TRUE(hello.ok()) << seed;
    EXPECT_EQ(hello->server_name(), "a.b.example");
    ASSERT_EQ(hello->alpn.size(), 2u);
    EXPECT_EQ(text(hello->alpn[1]), "http/1.1");
    EXPECT_TRUE(hello->has_ech);
    EXPECT_FALSE(hello->has_quic_transport_parameters);
  }
}

TEST(ClientHello, DuplicateExtensionsAreBadValue) {
  EXPECT_EQ(parse_error(ClientHelloBuilder().sni("a.example").sni("b.example").build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x1234, {}).alpn({"h2"}).extension(0x1234, {1}).build()),
            Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().ech(10).sni("x.example").ech(20).build()), Error::bad_value);
}

TEST(ClientHello, PreSharedKeyMustBeLast) {
  EXPECT_TRUE(parse_client_hello(ClientHelloBuilder().sni("a.example").extension(0x0029, {0}).build()).ok());
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x0029, {0}).sni("a.example").build()), Error::bad_value);
}

TEST(ClientHello, NoSniNoExtensions) {
  auto hello = parse_client_hello(ClientHelloBuilder().no_extensions().build());
  ASSERT_TRUE(hello.ok());
  EXPECT_FALSE(hello->has_server_name);
  EXPECT_EQ(hello->server_name(), "");
  EXPECT_TRUE(hello->extension_types.empty());
  hello = parse_client_hello(ClientHelloBuilder().alpn({"h2"}).build());
  ASSERT_TRUE(hello.ok());
  EXPECT_FALSE(hello->has_server_name);
}

TEST(ClientHello, ImplausibleHostNamesAreBadValue) {
  for (const char* host : {"", ".", "example.com.", ".example.com", "a..b", "exa mple.com", "a/b.com",
                           "192.168.1.1", "10.0.0.1", "bad\xc3\xa9.com", "x.y:443"}) {
    EXPECT_EQ(parse_error(ClientHelloBuilder().sni(host).build()), Error::bad_value) << host;
  }
  const std::string long_label(64, 'a');
  EXPECT_EQ(parse_error(ClientHelloBuilder().sni(long_label + ".com").build()), Error::bad_value);
  std::string long_name;
  while (long_name.size() < 254) long_name += "abcdefghi.";
  long_name.resize(254);
  EXPECT_EQ(parse_error(ClientHelloBuilder().sni(long_name).build()), Error::bad_value);
  for (const char* host : {"localhost", "xn--bcher-kva.example", "_dmarc.example.org", "a-b.c1", "1.2.3.example"}) {
    auto hello = parse_client_hello(ClientHelloBuilder().sni(host).build());
    ASSERT_TRUE(hello.ok()) << host;
    EXPECT_EQ(hello->server_name(), host);
  }
}

TEST(ClientHello, MalformedServerNameExtension) {
  // name type 1, an empty list, two names, a list length that disagrees.
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0, {0, 4, 1, 0, 1, 'a'}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0, {0, 0}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0, {0, 8, 0, 0, 1, 'a', 0, 0, 1, 'b'}).build()),
            Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0, {0, 5, 0, 0, 1, 'a'}).build()), Error::bad_length);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0, {0, 4, 0, 0, 1, 'a', 0}).build()), Error::bad_length);
}

TEST(ClientHello, MalformedAlpnVersionsAndKeyShare) {
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x10, {0, 0}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x10, {0, 1, 0}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x10, {0, 3, 3, 'h', '2'}).build()), Error::bad_length);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x2b, {3, 3, 4, 3}).build()), Error::bad_length);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x2b, {0}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x33, {0, 4, 0, 0x1d, 0, 0}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().extension(0x33, {0, 6, 0, 0x1d, 0, 9, 1, 2}).build()),
            Error::bad_length);
  auto empty_shares = parse_client_hello(ClientHelloBuilder().extension(0x33, {0, 0}).build());
  ASSERT_TRUE(empty_shares.ok());
  EXPECT_TRUE(empty_shares->key_shares.empty());
}

TEST(ClientHello, MalformedFixedFields) {
  EXPECT_EQ(parse_error(ClientHelloBuilder().legacy_version(0x0202).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().session_id(ByteVector(33, 1)).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().cipher_suites({}).build()), Error::bad_value);
  EXPECT_EQ(parse_error(ClientHelloBuilder().compression_methods({}).build()), Error::bad_value);
  ByteVector odd_suites = ClientHelloBuilder().no_extensions().build();
  odd_suites[4 + 2 + 32 + 1 + 1] = 3;  // suites length 2 → 3
  EXPECT_EQ(parse_error(odd_suites), Error::bad_length);
}

TEST(ClientHello, ExtensionsBlockLengthMustMatchTheBody) {
  ByteVector message = ClientHelloBuilder().sni("a.example").build();
  message.push_back(0x00);  // one byte after the extensions block inside the body
  const std::size_t body = message.size() - 4;
  message[1] = static_cast<std::uint8_t>(body >> 16);
  message[2] = static_cast<std::uint8_t>(body >> 8);
  message[3] = static_cast<std::uint8_t>(body);
  EXPECT_EQ(parse_error(message), Error::bad_length);
}

TEST(ClientHello, NotAClientHello) {
  EXPECT_EQ(parse_error(ByteVector{0x02, 0, 0, 0}), Error::bad_value);
  auto needed = client_hello_needed_length(ByteVector{0x16, 0x03, 0x01});
  ASSERT_FALSE(needed.ok());
  EXPECT_EQ(needed.error(), Error::bad_value);
}

TEST(ClientHello, TooManyListEntriesIsLimitExceeded) {
  std::vector<std::string> protocols;
  for (std::size_t i = 0; i <= kMaxAlpnProtocols; ++i) protocols.push_back("p" + std::to_string(i));
  EXPECT_EQ(parse_error(ClientHelloBuilder().alpn(protocols).build()), Error::limit_exceeded);
  ClientHelloBuilder many;
  for (std::uint16_t t = 0x100; t <= 0x100 + kMaxExtensions; ++t) many.extension(t, {});
  EXPECT_EQ(parse_error(many.build()), Error::limit_exceeded);
}

}  // namespace
}  // namespace quicstep::common
