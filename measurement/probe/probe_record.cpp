#include "measurement/probe/probe_record.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace quicstep::measurement::probe {

namespace {

using json = nlohmann::ordered_json;

double round1(double v) { return std::round(v * 10) / 10; }

json ms_or_null(double v) { return v < 0 ? json(nullptr) : json(round1(v)); }

json test_json(const TestRecord& t) {
  json tries = json::array();
  for (Label l : t.tries) tries.push_back(std::string(to_string(l)));
  return {{"label", std::string(to_string(t.label))}, {"tries", std::move(tries)}};
}

json address_json(const AddressRecord& a) {
  json j;
  j["ip"] = a.ip;
  j["family"] = a.family;
  j["quic"] = a.quic;
  j["same_as"] = a.same_as ? json(*a.same_as) : json(nullptr);
  j["error"] = a.error ? json(*a.error) : json(nullptr);
  if (a.facts) {
    const ConnectionFacts& f = *a.facts;
    char version[16];
    std::snprintf(version, sizeof(version), "0x%08x", f.version);
    j["version"] = version;
    j["alpn"] = f.alpn;
    j["retry"] = f.retry;
    j["transport_parameters"] = {{"disable_active_migration", f.disable_active_migration},
                                 {"active_connection_id_limit", f.active_connection_id_limit},
                                 {"preferred_address", f.preferred_address},
                                 {"max_idle_timeout_ms", f.max_idle_timeout_ms}};
    j["spare_cids"] = f.spare_cids;
    j["status"] = f.status == 0 ? json(nullptr) : json(f.status);
    j["server"] = f.server.empty() ? json(nullptr) : json(f.server);
    j["timings_ms"] = {{"handshake", ms_or_null(f.handshake_ms)},
                       {"first_response", ms_or_null(f.first_response_ms)}};
  } else {
    for (const char* key : {"version", "alpn", "retry", "transport_parameters", "spare_cids",
                            "status", "server", "timings_ms"}) {
      j[key] = nullptr;
    }
  }
  j["tests"] = {{"port_migration", test_json(a.port_migration)},
                {"nat_rebinding", test_json(a.nat_rebinding)},
                {"address_migration", test_json(a.address_migration)}};
  return j;
}

}  // namespace

std::string to_json_line(const DomainRecord& record) {
  json names = json::array();
  for (const NameRecord& n : record.names) {
    json addresses = json::array();
    for (const AddressRecord& a : n.addresses) addresses.push_back(address_json(a));
    names.push_back({{"name", n.name},
                     {"dns", {{"status", std::string(to_string(n.dns_status))},
                              {"a", n.a},
                              {"aaaa", n.aaaa}}},
                     {"addresses", std::move(addresses)}});
  }
  json j;
  j["input_line"] = record.input_line;
  j["rank"] = record.rank ? json(*record.rank) : json(nullptr);
  j["domain"] = record.domain;
  j["elapsed_ms"] = round1(record.elapsed_ms);
  j["names"] = std::move(names);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string bad_input_json_line(std::size_t input_line, const std::string& reason) {
  json j{{"input_line", input_line}, {"error", "bad_input"}, {"reason", reason}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace quicstep::measurement::probe
