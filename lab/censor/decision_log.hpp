// The censor's readable output: the decision log (one JSON object a line, appended and
// flushed per record) and a stats file (one JSON object, rewritten atomically by rename).
// Both are read by the lab tests and by `lab/censor/censorctl stats|log`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "lab/censor/censor_core.hpp"

namespace quicstep::censor {

// {"time": 1764457200.123456, "flow": {"proto": "udp", "client": "198.18.1.2",
//  "client_port": 40000, "server": "198.18.10.11", "server_port": 443},
//  "rule": "quic_sni", "action": "drop", "name": "blocked.test", "matched": ".blocked.test"}
// `wall_time` is the record's time in seconds since the Unix epoch.
nlohmann::json decision_to_json(const DecisionRecord& record, double wall_time);

// Counters of the core and the observer as one object.
nlohmann::json counters_to_json(const CensorCore& core);

class DecisionLog {
 public:
  DecisionLog() = default;
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  // Opens `path` for appending ("" = no log). Failure: the path and the errno text.
  common::Outcome open(const std::string& path);
  // Appends one line and flushes it. Errors are counted, never thrown.
  void write(const nlohmann::json& line);
  std::uint64_t errors() const { return errors_; }

 private:
  std::FILE* file_ = nullptr;
  std::uint64_t errors_ = 0;
};

// Writes `value` to `path` via a temporary file and rename. Returns false on failure.
bool write_json_file(const std::string& path, const nlohmann::json& value);

}  // namespace quicstep::censor
