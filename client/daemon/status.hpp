// Status: the daemon's state as JSON (quicstepctl status/flows, the control socket) and as
// Prometheus text (GET /metrics). Builds from snapshots; no I/O here.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "client/core/classifier.hpp"
#include "client/kernel/kernel_rules.hpp"
#include "net/nfqueue_frontend.hpp"

namespace quicstep::client::daemon {

struct StatusSnapshot {
  const core::Classifier* classifier = nullptr;
  std::map<std::string, kernel::KernelCounter> kernel;  // nft named counters
  net::NfqueueStats queue_out, queue_in;
  std::string channel_interface;
  std::string addressing;
  double uptime_s = 0;
  std::uint64_t set_updates = 0, set_update_failures = 0, reloads = 0;
  std::uint64_t channel_recreated = 0;
  std::uint64_t channel_readdressed = 0;
};

// {"paths": {"channel": {packets, bytes}, "native": {...}}, "channel_load_ratio", "flows",
//  "watchdog": {...}, "daemon": {...}, "kernel": {...}, "queues": {...}}
nlohmann::json status_json(const StatusSnapshot& s);
// Up to `limit` flows, most recently used first.
nlohmann::json flows_json(const core::Classifier& c, std::size_t limit);
// Prometheus text exposition format 0.0.4.
std::string metrics_text(const nlohmann::json& status);

}  // namespace quicstep::client::daemon
