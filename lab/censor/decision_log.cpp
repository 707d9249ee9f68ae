#include "lab/censor/decision_log.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace quicstep::censor {

nlohmann::json decision_to_json(const DecisionRecord& r, double wall_time) {
  const char* proto = r.flow.protocol == common::kIpProtoTcp ? "tcp"
                      : r.flow.protocol == common::kIpProtoUdp ? "udp" : "other";
  nlohmann::json j;
  j["time"] = wall_time;
  j["flow"] = {{"proto", proto},
               {"client", r.flow.client.to_string()},
               {"client_port", r.flow.client_port},
               {"server", r.flow.server.to_string()},
               {"server_port", r.flow.server_port}};
  j["rule"] = std::string(to_string(r.rule));
  j["action"] = std::string(to_string(r.action));
  j["name"] = r.name;
  j["matched"] = r.matched;
  return j;
}

nlohmann::json counters_to_json(const CensorCore& core) {
  const CensorCounters& c = core.counters();
  const auto& o = core.observer_counters();
  return {{"packets", c.packets},
          {"passed", c.passed},
          {"dropped", c.dropped},
          {"injected", c.injected},
          {"unparsed", c.unparsed},
          {"client_hellos", c.client_hellos},
          {"quic_sni_blocks", c.quic_sni_blocks},
          {"tcp_sni_blocks", c.tcp_sni_blocks},
          {"dns_forged", c.dns_forged},
          {"residual_blocks", c.residual_blocks},
          {"strict_blocks", c.strict_blocks},
          {"wireguard_blocks", c.wireguard_blocks},
          {"spared", c.spared},
          {"flows", core.flow_count()},
          {"flows_evicted", c.flows_evicted},
          {"residual_entries", core.residual_count()},
          {"decisions_lost", c.decisions_lost},
          {"observer",
           {{"quic_initials_decrypted", o.quic_initials_decrypted},
            {"quic_decrypt_failures", o.quic_decrypt_failures},
            {"client_hello_errors", o.client_hello_errors},
            {"dns_messages", o.dns_messages},
            {"ip_errors", o.ip_errors}}}};
}

DecisionLog::~DecisionLog() {
  if (file_ != nullptr) std::fclose(file_);
}

common::Outcome DecisionLog::open(const std::string& path) {
  if (path.empty()) return {};
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) return common::Failure(path + ": " + strerror(errno));
  return {};
}

void DecisionLog::write(const nlohmann::json& line) {
  if (file_ == nullptr) return;
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    ++errors_;
  }
}

bool write_json_file(const std::string& path, const nlohmann::json& value) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << value.dump(2) << "\n";
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace quicstep::censor
