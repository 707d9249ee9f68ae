// The wg-quick file as UAPI: a full file renders the exact set=1 request; every required key,
// bad key, bad number, host-name endpoint and misplaced line is refused with its line and
// the bad value quoted (never a secret key); every truncated prefix of a file parses or is
// refused, without a crash.
#include "client/tun/wg_quick_uapi.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quicstep::client::tun {
namespace {

// Keys made of known bytes, and their base64 (computed outside the code under test):
// bytes 0..31, 32..63, 64..95 and 96..127.
constexpr std::string_view kPrivate = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr std::string_view kPublic = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
constexpr std::string_view kPreshared = "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=";
constexpr std::string_view kPublic2 = "YGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8=";

// The lowercase hex of the key whose bytes are first, first+1, ..., first+31.
std::string hex_of_run(int first) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (int b = first; b < first + 32; ++b) {
    s += kDigits[b >> 4];
    s += kDigits[b & 0xf];
  }
  return s;
}

std::string s(std::string_view v) { return std::string(v); }

// A file as the app writes it (WgQuickWriter.java), with v4 and v6 everywhere.
std::string full_file() {
  return "[Interface]\n"
         "PrivateKey = " + s(kPrivate) + "\n"
         "Address = 10.8.0.2/32, fd00:8::2/128\n"
         "DNS = 10.8.0.1, fd00:8::1, corp.example\n"
         "MTU = 1420\n"
         "ListenPort = 51821\n"
         "FwMark = 0x51\n"
         "\n"
         "[Peer]\n"
         "PublicKey = " + s(kPublic) + "\n"
         "PresharedKey = " + s(kPreshared) + "\n"
         "AllowedIPs = 0.0.0.0/0, ::/0\n"
         "Endpoint = 198.18.0.1:51820\n"
         "PersistentKeepalive = 25\n"
         "\n"
         "[Peer]\n"
         "PublicKey = " + s(kPublic2) + "\n"
         "AllowedIPs = 192.0.2.0/24\n"
         "Endpoint = [2001:db8::1]:51820\n"
         "PersistentKeepalive = off\n";
}

// The smallest file the engine takes; `extra_interface` and `extra_peer` are appended to
// each section.
std::string minimal_file(std::string_view extra_interface = "", std::string_view extra_peer = "") {
  return "[Interface]\nPrivateKey = " + s(kPrivate) + "\nAddress = 10.8.0.2/32\n" +
         s(extra_interface) + "[Peer]\nPublicKey = " + s(kPublic) +
         "\nAllowedIPs = 0.0.0.0/0\nEndpoint = 198.18.0.1:51820\n" + s(extra_peer);
}

// Every error of parsing `text`, each as "file:line: message", one per line.
std::string errors_of(std::string_view text) {
  const WgQuickLoad load = parse_wg_quick(text, "wg0.conf");
  std::string all;
  for (const auto& e : load.errors) all += e.to_string() + "\n";
  return all;
}

// The only error of parsing `text` ("" when it parses, "N errors: ..." when more).
std::string one_error(std::string_view text) {
  const WgQuickLoad load = parse_wg_quick(text, "wg0.conf");
  if (load.errors.size() == 1) return load.errors[0].to_string();
  return std::to_string(load.errors.size()) + " errors: " + errors_of(text);
}

TEST(WgQuickUapi, FullFileRendersTheExactSetRequest) {
  const WgQuickLoad load = parse_wg_quick(full_file(), "wg0.conf");
  ASSERT_TRUE(load.ok()) << errors_of(full_file());
  EXPECT_EQ(render_uapi_set(load.config),
            "set=1\n"
            "private_key=" + hex_of_run(0) + "\n"
            "listen_port=51821\n"
            "fwmark=81\n"
            "replace_peers=true\n"
            "public_key=" + hex_of_run(32) + "\n"
            "preshared_key=" + hex_of_run(64) + "\n"
            "endpoint=198.18.0.1:51820\n"
            "persistent_keepalive_interval=25\n"
            "replace_allowed_ips=true\n"
            "allowed_ip=0.0.0.0/0\n"
            "allowed_ip=::/0\n"
            "public_key=" + hex_of_run(96) + "\n"
            "endpoint=[2001:db8::1]:51820\n"
            "persistent_keepalive_interval=0\n"
            "replace_allowed_ips=true\n"
            "allowed_ip=192.0.2.0/24\n"
            "\n");
}

TEST(WgQuickUapi, FullFileFillsTheStruct) {
  const WgQuickLoad load = parse_wg_quick(full_file(), "wg0.conf");
  ASSERT_TRUE(load.ok()) << errors_of(full_file());
  const WgQuickConfig& c = load.config;
  ASSERT_EQ(c.addresses.size(), 2u);
  EXPECT_EQ(c.addresses[0].to_string(), "10.8.0.2/32");
  EXPECT_EQ(c.addresses[0].address.family, common::IpFamily::v4);
  EXPECT_EQ(c.addresses[1].to_string(), "fd00:8::2/128");
  EXPECT_EQ(c.addresses[1].address.family, common::IpFamily::v6);
  ASSERT_EQ(c.dns_servers.size(), 2u);
  EXPECT_EQ(c.dns_servers[0], common::IpAddress::v4({10, 8, 0, 1}));
  EXPECT_EQ(c.dns_servers[1].to_string(), "fd00:8::1");
  EXPECT_EQ(c.dns_search, std::vector<std::string>{"corp.example"});
  EXPECT_EQ(c.mtu, 1420);
  EXPECT_EQ(c.listen_port, 51821);
  EXPECT_EQ(c.fwmark, 0x51u);
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[0].line, 9u);
  EXPECT_EQ(key_to_hex(c.peers[0].public_key), hex_of_run(32));
  EXPECT_EQ(c.peers[0].persistent_keepalive, 25);
  EXPECT_EQ(c.peers[1].endpoint.to_string(), "[2001:db8::1]:51820");
  EXPECT_FALSE(c.peers[1].preshared_key.has_value());
  EXPECT_EQ(c.peers[1].persistent_keepalive, 0);
  EXPECT_TRUE(load.ignored.empty());
}

TEST(WgQuickUapi, MinimalFileRendersOnlyWhatIsSet) {
  const WgQuickLoad load = parse_wg_quick(minimal_file(), "wg0.conf");
  ASSERT_TRUE(load.ok()) << errors_of(minimal_file());
  EXPECT_EQ(render_uapi_set(load.config),
            "set=1\nprivate_key=" + hex_of_run(0) + "\nreplace_peers=true\npublic_key=" +
                hex_of_run(32) +
                "\nendpoint=198.18.0.1:51820\nreplace_allowed_ips=true\n"
                "allowed_ip=0.0.0.0/0\n\n");
}

TEST(WgQuickUapi, ReadsKeysAsWgQuickDoes) {
  // Case-insensitive keys and headers, comments, blank lines, CRLF, spaces around '=',
  // a repeated list key, an address without a length.
  const std::string text = "# written by hand\r\n[interface]\r\n  privatekey=" + s(kPrivate) +
                           "   # the device's\r\n\r\nADDRESS\t=\t10.8.0.2\r\n"
                           "address = fd00::2/64\r\n"
                           "[PEER]\r\nPublicKey =" + s(kPublic) +
                           "\r\nallowedips = 10.0.0.0/8 ,fd00::/8\r\nAllowedIPs = 192.0.2.1\r\n"
                           "endpoint = 198.18.0.1:1\r\npersistentkeepalive = OFF";
  const WgQuickLoad load = parse_wg_quick(text, "wg0.conf");
  ASSERT_TRUE(load.ok()) << errors_of(text);
  const WgQuickConfig& c = load.config;
  ASSERT_EQ(c.addresses.size(), 2u);
  EXPECT_EQ(c.addresses[0].to_string(), "10.8.0.2/32");
  EXPECT_EQ(c.addresses[1].to_string(), "fd00::2/64");
  ASSERT_EQ(c.peers.size(), 1u);
  ASSERT_EQ(c.peers[0].allowed_ips.size(), 3u);
  EXPECT_EQ(c.peers[0].allowed_ips[2].to_string(), "192.0.2.1/32");
  EXPECT_EQ(c.peers[0].endpoint.port, 1);
  EXPECT_EQ(c.peers[0].persistent_keepalive, 0);
}

TEST(WgQuickUapi, IgnoresWgQuickOnlyKeys) {
  const std::string text = minimal_file(
      "Table = off\nPreUp = true\nPostUp = iptables -A x\nPostUp = echo # hooks may repeat\n"
      "PreDown = true\npostdown = true\nSaveConfig = false\n");
  const WgQuickLoad load = parse_wg_quick(text, "wg0.conf");
  ASSERT_TRUE(load.ok()) << errors_of(text);
  ASSERT_EQ(load.ignored.size(), 7u);
  EXPECT_EQ(load.ignored[0].line, 4u);
  EXPECT_EQ(load.ignored[0].key, "Table");
  EXPECT_EQ(load.ignored[5].key, "postdown");
  EXPECT_EQ(load.ignored[6].line, 10u);
  EXPECT_EQ(render_uapi_set(load.config),
            render_uapi_set(parse_wg_quick(minimal_file(), "wg0.conf").config));
}

struct Case {
  const char* description;
  std::string text;
  std::string error;  // the only error, as "file:line: message"
};

void expect_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(one_error(c.text), c.error) << c.description;
}

TEST(WgQuickUapi, RefusesAFileWithoutARequiredKeyOrSection) {
  const std::string interface = "[Interface]\nPrivateKey = " + s(kPrivate) + "\n";
  const std::string peer = "[Peer]\nPublicKey = " + s(kPublic) +
                           "\nAllowedIPs = 0.0.0.0/0\nEndpoint = 198.18.0.1:51820\n";
  expect_cases({
      {"no PrivateKey", "[Interface]\nAddress = 10.8.0.2/32\n" + peer,
       "wg0.conf:1: [Interface] has no PrivateKey"},
      {"no Address", interface + peer,
       "wg0.conf:1: [Interface] has no Address (the TUN's address is the tunnel address)"},
      {"no PublicKey",
       interface + "Address = 10.8.0.2\n[Peer]\nAllowedIPs = 0.0.0.0/0\nEndpoint = 198.18.0.1:1\n",
       "wg0.conf:4: [Peer] has no PublicKey"},
      {"no Endpoint",
       interface + "Address = 10.8.0.2\n[Peer]\nPublicKey = " + s(kPublic) +
           "\nAllowedIPs = ::/0\n",
       "wg0.conf:4: [Peer] has no Endpoint (the engine starts the handshake, so it needs the "
       "peer's address)"},
      {"no AllowedIPs",
       interface + "Address = 10.8.0.2\n[Peer]\nPublicKey = " + s(kPublic) +
           "\nEndpoint = 198.18.0.1:1\n",
       "wg0.conf:4: [Peer] has no AllowedIPs"},
      {"no [Peer]", interface + "Address = 10.8.0.2\n",
       "wg0.conf: no [Peer] section (the engine needs its peer)"},
      {"no [Interface]", peer, "wg0.conf: no [Interface] section"},
  });
  EXPECT_EQ(errors_of(""),
            "wg0.conf: no [Interface] section\n"
            "wg0.conf: no [Peer] section (the engine needs its peer)\n");
}

// minimal_file() with `key` in place of the public or the private key.
std::string with_key(std::string_view old_key, std::string_view key) {
  std::string text = minimal_file();
  return text.replace(text.find(old_key), old_key.size(), key);
}

TEST(WgQuickUapi, RefusesBadKeys) {
  const std::string bad_char = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh*=";
  const std::string short_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd";      // 30 bytes
  const std::string long_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g";  // 33 bytes
  const std::string no_padding = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
  const std::string stray_bits = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=";  // '9': a bit
  const std::string inner_space = "AAECAwQFBgcICQoLDA0ODx AREhMUFRYXGBkaGxwdHh8=";
  const std::string format = " is not base64 (a key is 44 characters, the last '=')";
  expect_cases({
      {"public: not base64", with_key(kPublic, bad_char),
       "wg0.conf:5: PublicKey" + format + ": '" + bad_char + "'"},
      {"public: 30 bytes", with_key(kPublic, short_key),
       "wg0.conf:5: PublicKey is 30 bytes, not 32: '" + short_key + "'"},
      {"public: 33 bytes", with_key(kPublic, long_key),
       "wg0.conf:5: PublicKey is 33 bytes, not 32: '" + long_key + "'"},
      {"public: no padding", with_key(kPublic, no_padding),
       "wg0.conf:5: PublicKey" + format + ": '" + no_padding + "'"},
      {"public: bits past the 32nd byte", with_key(kPublic, stray_bits),
       "wg0.conf:5: PublicKey" + format + ": '" + stray_bits + "'"},
      {"public: a space inside", with_key(kPublic, inner_space),
       "wg0.conf:5: PublicKey" + format + ": '" + inner_space + "'"},
      {"private: 30 bytes", with_key(kPrivate, short_key),
       "wg0.conf:2: PrivateKey is 30 bytes, not 32 (the value is secret: not shown)"},
      {"private: 100 characters", with_key(kPrivate, std::string(100, 'A')),
       "wg0.conf:2: PrivateKey is 100 characters, not 44 (the value is secret: not shown)"},
      {"private: not base64", with_key(kPrivate, bad_char),
       "wg0.conf:2: PrivateKey" + format + " (the value is secret: not shown)"},
      {"preshared: 33 bytes", minimal_file("", "PresharedKey = " + long_key + "\n"),
       "wg0.conf:8: PresharedKey is 33 bytes, not 32 (the value is secret: not shown)"},
  });
}

TEST(WgQuickUapi, RefusesHostNameEndpoints) {
  const std::string base = minimal_file();
  const auto at = base.find("198.18.0.1:51820");
  auto with = [&](std::string_view endpoint) {
    return std::string(base).replace(at, 16, endpoint);
  };
  expect_cases({
      {"a name", with("vpn.example.com:51820"),
       "wg0.conf:7: Endpoint has a host name, not an address: 'vpn.example.com:51820' (names "
       "are resolved before the engine, which never looks one up)"},
      {"a name without a port", with("vpn.example.com"),
       "wg0.conf:7: Endpoint has a host name, not an address: 'vpn.example.com' (names are "
       "resolved before the engine, which never looks one up)"},
      {"a bare IPv6 address", with("2001:db8::1:51820"),
       "wg0.conf:7: Endpoint is not address:port or [IPv6 address]:port with a port in "
       "1-65535: '2001:db8::1:51820'"},
      {"IPv4 in brackets", with("[198.18.0.1]:51820"),
       "wg0.conf:7: Endpoint is not address:port or [IPv6 address]:port with a port in "
       "1-65535: '[198.18.0.1]:51820'"},
      {"port 0", with("198.18.0.1:0"),
       "wg0.conf:7: Endpoint is not address:port or [IPv6 address]:port with a port in "
       "1-65535: '198.18.0.1:0'"},
      {"port 65536", with("[2001:db8::1]:65536"),
       "wg0.conf:7: Endpoint is not address:port or [IPv6 address]:port with a port in "
       "1-65535: '[2001:db8::1]:65536'"},
      {"no port", with("[2001:db8::1]"),
       "wg0.conf:7: Endpoint is not address:port or [IPv6 address]:port with a port in "
       "1-65535: '[2001:db8::1]'"},
  });
}

TEST(WgQuickUapi, LooksUpAHostNameEndpointWithTheCallersLookup) {
  const std::string base = minimal_file();
  const auto at = base.find("198.18.0.1:51820");
  auto with = [&](std::string_view endpoint) {
    return std::string(base).replace(at, 16, endpoint);
  };
  std::vector<std::string> asked;
  const EndpointLookup lookup =
      [&](const std::string& host) -> common::Result<common::IpAddress, common::Failure> {
    asked.push_back(host);
    if (host == "vpn.example.com") return common::IpAddress::v4({198, 18, 0, 7});
    if (host == "v6.example.com") {
      return common::IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7});
    }
    return common::Failure("cannot look up " + host + ": Name or service not known");
  };
  WgQuickLoad load = parse_wg_quick(with("vpn.example.com:1637"), "wg0.conf", lookup);
  ASSERT_TRUE(load.ok()) << load.errors.front().to_string();
  EXPECT_EQ(load.config.peers.at(0).endpoint.to_string(), "198.18.0.7:1637");
  EXPECT_EQ(load.config.peers.at(0).endpoint.host, "vpn.example.com");
  EXPECT_NE(render_uapi_set(load.config).find("\nendpoint=198.18.0.7:1637\n"), std::string::npos);
  load = parse_wg_quick(with("v6.example.com:51820"), "wg0.conf", lookup);
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load.config.peers.at(0).endpoint.to_string(), "[2001:db8::7]:51820");
  // A numeric endpoint is not looked up.
  asked.clear();
  load = parse_wg_quick(base, "wg0.conf", lookup);
  ASSERT_TRUE(load.ok());
  EXPECT_TRUE(asked.empty());
  EXPECT_TRUE(load.config.peers.at(0).endpoint.host.empty());
  // A name the lookup cannot resolve, and a name without a port.
  load = parse_wg_quick(with("gone.example.com:51820"), "wg0.conf", lookup);
  ASSERT_EQ(load.errors.size(), 1u);
  EXPECT_EQ(load.errors[0].to_string(),
            "wg0.conf:7: Endpoint 'gone.example.com:51820': cannot look up gone.example.com: "
            "Name or service not known");
  load = parse_wg_quick(with("vpn.example.com"), "wg0.conf", lookup);
  ASSERT_EQ(load.errors.size(), 1u);
  EXPECT_EQ(load.errors[0].to_string(),
            "wg0.conf:7: Endpoint is not address:port, [IPv6 address]:port or name:port with a "
            "port in 1-65535: 'vpn.example.com'");
}

TEST(WgQuickUapi, RefusesNumbersOutOfRange) {
  expect_cases({
      {"ListenPort 65536", minimal_file("ListenPort = 65536\n"),
       "wg0.conf:4: ListenPort is not 0-65535: '65536'"},
      {"ListenPort -1", minimal_file("ListenPort = -1\n"),
       "wg0.conf:4: ListenPort is not 0-65535: '-1'"},
      {"ListenPort with a suffix", minimal_file("ListenPort = 51820x\n"),
       "wg0.conf:4: ListenPort is not 0-65535: '51820x'"},
      {"MTU 1279", minimal_file("MTU = 1279\n"), "wg0.conf:4: MTU is not 1280-65535: '1279'"},
      {"MTU 65536", minimal_file("MTU = 65536\n"), "wg0.conf:4: MTU is not 1280-65535: '65536'"},
      {"MTU +1500", minimal_file("MTU = +1500\n"), "wg0.conf:4: MTU is not 1280-65535: '+1500'"},
      {"FwMark 2^32", minimal_file("FwMark = 4294967296\n"),
       "wg0.conf:4: FwMark is neither 'off' nor 0-0xffffffff: '4294967296'"},
      {"FwMark 0x", minimal_file("FwMark = 0x\n"),
       "wg0.conf:4: FwMark is neither 'off' nor 0-0xffffffff: '0x'"},
      {"keepalive abc", minimal_file("", "PersistentKeepalive = abc\n"),
       "wg0.conf:8: PersistentKeepalive is neither 'off' nor 0-65535: 'abc'"},
      {"keepalive 65536", minimal_file("", "PersistentKeepalive = 65536\n"),
       "wg0.conf:8: PersistentKeepalive is neither 'off' nor 0-65535: '65536'"},
      {"keepalive 25 s", minimal_file("", "PersistentKeepalive = 25 s\n"),
       "wg0.conf:8: PersistentKeepalive is neither 'off' nor 0-65535: '25 s'"},
  });
  const WgQuickLoad edge = parse_wg_quick(
      minimal_file("ListenPort = 0\nMTU = 65535\nFwMark = off\n", "PersistentKeepalive = 65535\n"),
      "wg0.conf");
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge.config.listen_port, 0);
  EXPECT_EQ(edge.config.mtu, 65535);
  EXPECT_EQ(edge.config.fwmark, 0u);
  EXPECT_EQ(edge.config.peers[0].persistent_keepalive, 65535);
}

TEST(WgQuickUapi, RefusesBadAddresses) {
  expect_cases({
      {"v4 length 33", minimal_file("Address = 10.0.0.1/33\n"),
       "wg0.conf:4: Address is not an IP address with an optional /length: '10.0.0.1/33'"},
      {"v6 length 129, second item", minimal_file("Address = 10.0.0.1, fd00::1/129\n"),
       "wg0.conf:4: Address is not an IP address with an optional /length: 'fd00::1/129'"},
      {"empty length", minimal_file("", "AllowedIPs = 10.0.0.0/\n"),
       "wg0.conf:8: AllowedIPs is not an IP address with an optional /length: '10.0.0.0/'"},
      {"a name", minimal_file("", "AllowedIPs = example.com/32\n"),
       "wg0.conf:8: AllowedIPs is not an IP address with an optional /length: 'example.com/32'"},
      {"empty item", minimal_file("", "AllowedIPs = 10.0.0.0/8,,::/0\n"),
       "wg0.conf:8: AllowedIPs has an empty item in its list"},
      {"bad DNS", minimal_file("DNS = 10.0.0.300\n"),
       "wg0.conf:4: DNS is neither an IP address nor a search domain: '10.0.0.300'"},
      {"empty value", minimal_file("DNS =\n"), "wg0.conf:4: DNS has no value"},
  });
}

TEST(WgQuickUapi, RefusesMisplacedAndUnknownLines) {
  expect_cases({
      {"a key outside a section", "ListenPort = 1\n" + minimal_file(),
       "wg0.conf:1: 'ListenPort' comes before any section (a key belongs in [Interface] or "
       "[Peer])"},
      {"an unknown key", minimal_file("Foo = 1\n"),
       "wg0.conf:4: unknown key 'Foo' in [Interface] (expected one of: 'PrivateKey' "
       "'ListenPort' 'FwMark' 'Address' 'DNS' 'MTU' 'Table' 'PreUp' 'PostUp' 'PreDown' "
       "'PostDown' 'SaveConfig')"},
      {"a key of the other section", minimal_file("", "ListenPort = 1\n"),
       "wg0.conf:8: unknown key 'ListenPort' in [Peer] (expected one of: 'PublicKey' "
       "'PresharedKey' 'Endpoint' 'AllowedIPs' 'PersistentKeepalive'; ListenPort belongs in "
       "[Interface])"},
      {"not Key = value", minimal_file("ListenPort 1\n"),
       "wg0.conf:4: not a section header or a 'Key = value' line: 'ListenPort 1'"},
      {"an unknown section (its keys are not checked)", minimal_file() + "[Peers]\nFoo = 1\n",
       "wg0.conf:8: not a section wg-quick knows (expected [Interface] or [Peer]): '[Peers]'"},
      {"a second [Interface]", minimal_file() + "[Interface]\nListenPort = 1\n",
       "wg0.conf:8: a second [Interface] (the first is on line 1)"},
      {"a second PrivateKey", minimal_file("PrivateKey = " + s(kPrivate) + "\n"),
       "wg0.conf:4: a second PrivateKey in [Interface] (the first is on line 2)"},
  });
}

TEST(WgQuickUapi, ReportsEveryErrorInLineOrder) {
  const std::string text = minimal_file("MTU = 1\nListenPort = x\n", "PersistentKeepalive = y\n");
  EXPECT_EQ(errors_of(text),
            "wg0.conf:4: MTU is not 1280-65535: '1'\n"
            "wg0.conf:5: ListenPort is not 0-65535: 'x'\n"
            "wg0.conf:10: PersistentKeepalive is neither 'off' nor 0-65535: 'y'\n");
}

// No error ever shows the private or preshared key, nor a good part of one: not when its
// value is bad, not when its line cannot be read at all.
TEST(WgQuickUapi, NeverShowsASecretKey) {
  const std::string key_alone = "[Interface]\nPrivateKey =\n" + s(kPrivate) + "\n";
  const std::string typo = "[Interface]\nPrivteKey = " + s(kPrivate) + "\n";
  const std::string no_equals = "[Interface]\nPrivateKey " + s(kPrivate) + "\n";
  const std::string in_header = "[" + s(kPrivate) + "]\n";
  const std::string as_dns = "[Interface]\nDNS = " + s(kPrivate) + "\n";
  for (const std::string& text : {key_alone, typo, no_equals, in_header, as_dns}) {
    const std::string errors = errors_of(text);
    EXPECT_FALSE(errors.empty()) << text;
    EXPECT_EQ(errors.find(kPrivate.substr(0, 12)), std::string::npos) << errors;
  }
  EXPECT_NE(errors_of(key_alone).find("wg0.conf:3: unknown key (not shown: it may hold a key) "
                                      "in [Interface]"),
            std::string::npos);
}

// ngtcp2's habit: every truncated length of a valid input is handled, and no prefix shows
// a secret.
TEST(WgQuickUapi, EveryTruncatedPrefixParsesOrIsRefused) {
  const std::string text = full_file();
  std::size_t parsed = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) {
    const WgQuickLoad load = parse_wg_quick(std::string_view(text).substr(0, n), "wg0.conf");
    if (load.ok()) {
      ++parsed;
      EXPECT_FALSE(load.config.peers.empty());
      EXPECT_FALSE(render_uapi_set(load.config).empty());
      continue;
    }
    for (const auto& e : load.errors) {
      EXPECT_FALSE(e.message.empty());
      EXPECT_EQ(e.message.find(kPrivate.substr(0, 8)), std::string::npos) << e.message;
      EXPECT_EQ(e.message.find(kPreshared.substr(0, 8)), std::string::npos) << e.message;
    }
  }
  EXPECT_GT(parsed, 0u);  // the whole file, and its prefixes that end after a whole value
}

}  // namespace
}  // namespace quicstep::client::tun
