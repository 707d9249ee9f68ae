// The JSON line quicstep-probe writes per domain (schema in measurement/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "measurement/probe/dns_answer.hpp"
#include "measurement/probe/try_label.hpp"

namespace quicstep::measurement::probe {

struct TestRecord {
  Label label = Label::not_run;
  std::vector<Label> tries;
};

// What the first successful connection to an address learnt.
struct ConnectionFacts {
  std::uint32_t version = 0;
  std::string alpn;
  bool retry = false;
  bool disable_active_migration = false;
  std::uint64_t active_connection_id_limit = 0;
  bool preferred_address = false;
  std::uint64_t max_idle_timeout_ms = 0;
  std::size_t spare_cids = 0;  // NEW_CONNECTION_ID frames received before the first switch
  int status = 0;              // HTTP status of GET /, 0 when none arrived
  std::string server;          // Server header, "" when absent
  double handshake_ms = -1;
  double first_response_ms = -1;  // handshake start → end of the first response
};

struct AddressRecord {
  std::string ip;
  int family = 4;
  bool quic = false;
  std::optional<std::string> error;  // why quic is false (or the first response failed)
  std::optional<ConnectionFacts> facts;
  TestRecord port_migration, nat_rebinding, address_migration;
  // The name whose probe of this same address this record copies (an address is probed
  // once per domain: www.<apex> usually shares the apex's); unset when probed for this name.
  std::optional<std::string> same_as;
};

struct NameRecord {
  std::string name;
  DnsStatus dns_status = DnsStatus::no_answer;
  std::vector<std::string> a, aaaa;
  std::vector<AddressRecord> addresses;
};

struct DomainRecord {
  std::size_t input_line = 0;
  std::optional<std::uint64_t> rank;
  std::string domain;
  double elapsed_ms = 0;
  std::vector<NameRecord> names;
};

// One line of JSON, without the newline.
std::string to_json_line(const DomainRecord& record);
// {"input_line":N,"error":"bad_input","reason":...}
std::string bad_input_json_line(std::size_t input_line, const std::string& reason);

}  // namespace quicstep::measurement::probe
