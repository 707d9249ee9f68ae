#include "measurement/probe/probe_record.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "measurement/probe/static_hosts.hpp"
#include "support/outcome.hpp"

namespace quicstep::measurement::probe {
namespace {

using quicstep::test_support::failure_text;

TEST(ProbeRecord, FullRecord) {
  DomainRecord r;
  r.input_line = 3;
  r.rank = 12;
  r.domain = "a.test";
  r.elapsed_ms = 812.44;
  NameRecord n;
  n.name = "a.test";
  n.dns_status = DnsStatus::ok;
  n.a = {"198.18.129.4"};
  AddressRecord a;
  a.ip = "198.18.129.4";
  a.quic = true;
  ConnectionFacts f;
  f.version = 1;
  f.alpn = "h3";
  f.active_connection_id_limit = 8;
  f.max_idle_timeout_ms = 30000;
  f.spare_cids = 7;
  f.status = 200;
  f.server = "quicstep-server";
  f.handshake_ms = 3.14;
  f.first_response_ms = 4.2;
  a.facts = f;
  a.port_migration = {Label::pass, {Label::pass, Label::pass}};
  a.nat_rebinding = {Label::timeout_after_switch,
                     {Label::pass, Label::timeout_after_switch, Label::timeout_after_switch}};
  n.addresses.push_back(a);
  r.names.push_back(n);
  const auto j = nlohmann::json::parse(to_json_line(r));
  EXPECT_EQ(j["input_line"], 3);
  EXPECT_EQ(j["rank"], 12);
  EXPECT_DOUBLE_EQ(j["elapsed_ms"].get<double>(), 812.4);
  const auto& addr = j["names"][0]["addresses"][0];
  EXPECT_EQ(j["names"][0]["dns"]["status"], "ok");
  EXPECT_EQ(j["names"][0]["dns"]["aaaa"], nlohmann::json::array());
  EXPECT_EQ(addr["version"], "0x00000001");
  EXPECT_EQ(addr["error"], nullptr);
  EXPECT_EQ(addr["same_as"], nullptr);  // probed for this name
  EXPECT_EQ(addr["retry"], false);
  EXPECT_EQ(addr["transport_parameters"]["active_connection_id_limit"], 8);
  EXPECT_EQ(addr["transport_parameters"]["disable_active_migration"], false);
  EXPECT_EQ(addr["spare_cids"], 7);
  EXPECT_EQ(addr["status"], 200);
  EXPECT_DOUBLE_EQ(addr["timings_ms"]["handshake"].get<double>(), 3.1);
  EXPECT_EQ(addr["tests"]["port_migration"]["label"], "pass");
  EXPECT_EQ(addr["tests"]["nat_rebinding"]["tries"][0], "pass");
  EXPECT_EQ(addr["tests"]["nat_rebinding"]["label"], "timeout_after_switch");
  EXPECT_EQ(addr["tests"]["address_migration"]["label"], "not_run");
  EXPECT_EQ(addr["tests"]["address_migration"]["tries"], nlohmann::json::array());
  EXPECT_EQ(to_json_line(r).find('\n'), std::string::npos);
}

TEST(ProbeRecord, NoQuic) {
  DomainRecord r;
  r.domain = "b.test";
  NameRecord n;
  n.name = "b.test";
  AddressRecord a;
  a.ip = "2001:db8::1";
  a.family = 6;
  a.error = "icmp_unreachable";
  n.addresses.push_back(a);
  r.names.push_back(n);
  const auto j = nlohmann::json::parse(to_json_line(r));
  EXPECT_EQ(j["rank"], nullptr);
  const auto& addr = j["names"][0]["addresses"][0];
  EXPECT_EQ(addr["quic"], false);
  EXPECT_EQ(addr["error"], "icmp_unreachable");
  EXPECT_EQ(addr["family"], 6);
  EXPECT_EQ(addr["version"], nullptr);
  EXPECT_EQ(addr["transport_parameters"], nullptr);
}

TEST(ProbeRecord, SameAsNamesTheProbeThisAddressCopies) {
  DomainRecord r;
  r.domain = "c.test";
  NameRecord n;
  n.name = "www.c.test";
  AddressRecord a;
  a.ip = "198.18.0.9";
  a.same_as = "c.test";
  n.addresses.push_back(a);
  r.names.push_back(n);
  const auto j = nlohmann::json::parse(to_json_line(r));
  EXPECT_EQ(j["names"][0]["addresses"][0]["same_as"], "c.test");
}

TEST(ProbeRecord, BadInputAndInvalidUtf8) {
  const auto j = nlohmann::json::parse(bad_input_json_line(7, "invalid character `\xff'"));
  EXPECT_EQ(j["input_line"], 7);
  EXPECT_EQ(j["error"], "bad_input");
  EXPECT_TRUE(j["reason"].is_string());
}

TEST(StaticHosts, ParsesAndReportsLine) {
  StaticHosts hosts;
  const auto parsed = parse_static_hosts(
      "# hosts\nA.test 198.18.0.1 2001:DB8::1\n\nb.test 198.18.0.2 # x\n", "hosts.txt", &hosts);
  ASSERT_TRUE(parsed) << failure_text(parsed);
  ASSERT_EQ(hosts.count("a.test"), 1u);
  EXPECT_EQ(hosts["a.test"].a, (std::vector<std::string>{"198.18.0.1"}));
  EXPECT_EQ(hosts["a.test"].aaaa, (std::vector<std::string>{"2001:db8::1"}));
  std::string error =
      failure_text(parse_static_hosts("a.test 198.18.0.1\nb.test 300.1.1.1\n", "h", &hosts));
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(error, "h:2: not an IPv4 or IPv6 address: `300.1.1.1'");
  error = failure_text(parse_static_hosts("c.test\n", "h", &hosts));
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(error, "h:1: no address after `c.test'");
  error = failure_text(parse_static_hosts("bad..name 198.18.0.1\n", "h", &hosts));
  EXPECT_FALSE(error.empty());
  EXPECT_NE(error.find("h:1: empty label"), std::string::npos);
}

}  // namespace
}  // namespace quicstep::measurement::probe
