#include "client/daemon/status.hpp"

namespace quicstep::client::daemon {

using core::Classifier;
using core::Counters;
using core::FlowEntry;
using core::Path;
using core::Reason;
using core::kPathCount;
using core::kReasonCount;
using kernel::KernelCounter;
namespace {

nlohmann::json path_json(std::uint64_t packets, std::uint64_t bytes) {
  return {{"packets", packets}, {"bytes", bytes}};
}

nlohmann::json queue_json(const net::NfqueueStats& q) {
  return {{"packets", q.packets},         {"bytes", q.bytes},
          {"enobufs", q.enobufs},         {"bad_messages", q.bad_messages},
          {"verdict_errors", q.verdict_errors}, {"batches", q.batches},
          {"deferred", q.deferred},       {"defer_refused", q.defer_refused},
          {"defer_abandoned", q.defer_abandoned}};
}

KernelCounter get(const std::map<std::string, KernelCounter>& m, const char* name) {
  auto it = m.find(name);
  return it == m.end() ? KernelCounter{} : it->second;
}

}  // namespace

nlohmann::json status_json(const StatusSnapshot& s) {
  const Counters& c = s.classifier->counters();
  const KernelCounter ch = get(s.kernel, "channel_out");
  const KernelCounter na = get(s.kernel, "native_out");
  const KernelCounter ch_in = get(s.kernel, "channel_in");
  const KernelCounter na_in = get(s.kernel, "native_in");
  nlohmann::json j;
  // The kernel's view counts every packet leaving on each path, including those decided
  // in the kernel (DNS, TCP, long headers, flows in the native set) and by the daemon;
  // "in_" is what arrived: everything from the channel, and QUIC (from a QUIC port) natively.
  auto both = [](const KernelCounter& out, const KernelCounter& in) {
    return nlohmann::json{{"packets", out.packets}, {"bytes", out.bytes},
                          {"in_packets", in.packets}, {"in_bytes", in.bytes}};
  };
  j["paths"] = {{"channel", both(ch, ch_in)}, {"native", both(na, na_in)}};
  // The channel's share of all the bytes it could have carried, both directions.
  const double channel_bytes = static_cast<double>(ch.bytes + ch_in.bytes);
  const double total = channel_bytes + static_cast<double>(na.bytes + na_in.bytes);
  j["channel_load_ratio"] = total > 0 ? channel_bytes / total : 0.0;
  nlohmann::json kernel = nlohmann::json::object();
  for (const auto& [name, k] : s.kernel) kernel[name] = path_json(k.packets, k.bytes);
  j["kernel"] = kernel;
  nlohmann::json decided = nlohmann::json::object();
  for (std::size_t p = 0; p < kPathCount; ++p) {
    decided[std::string(to_string(static_cast<Path>(p)))] =
        path_json(c.outbound[p].packets, c.outbound[p].bytes);
  }
  nlohmann::json reasons = nlohmann::json::object();
  for (std::size_t r = 0; r < kReasonCount; ++r) {
    if (c.reasons[r] != 0) reasons[std::string(to_string(static_cast<Reason>(r)))] = c.reasons[r];
  }
  j["daemon"] = {{"decided_outbound", decided},
                 {"inbound_native", path_json(c.inbound_native.packets, c.inbound_native.bytes)},
                 {"reasons", reasons},
                 {"set_updates", s.set_updates},
                 {"set_update_failures", s.set_update_failures},
                 {"reloads", s.reloads},
                 {"channel_recreated", s.channel_recreated},
                 {"channel_readdressed", s.channel_readdressed},
                 {"uptime_s", s.uptime_s}};
  j["flows"] = {{"tracked", s.classifier->flow_count()},
                {"created", c.flows_created},
                {"evicted", c.flows_evicted},
                {"expired", c.flows_expired},
                {"closed", c.flows_closed}};
  j["watchdog"] = {{"moved_native", c.moved_native},
                   {"confirmed", c.confirmed},
                   {"failed_back", c.failed_back},
                   {"pinned_by_cache", c.pinned_by_cache},
                   {"quiet_at_bound", c.quiet_at_bound},
                   {"non_migrating_destinations", s.classifier->destinations().size()},
                   {"events_lost", c.events_lost}};
  j["preferred_address"] = {{"destinations", s.classifier->preferred_addresses().destinations()},
                            {"client_moves", c.preferred_address_moves},
                            {"after_move", c.preferred_address_after_move},
                            {"held_flows", c.held_for_preferred_address}};
  j["native_switch"] = {{"switch_waits", c.switch_waits},
                        {"wait_ms_total", static_cast<double>(c.switch_wait_ns) / 1e6},
                        {"rtt_samples", c.rtt_samples}};
  j["queues"] = {{"outbound", queue_json(s.queue_out)}, {"inbound", queue_json(s.queue_in)}};
  j["channel"] = {{"interface", s.channel_interface}, {"addressing", s.addressing}};
  return j;
}

nlohmann::json flows_json(const Classifier& c, std::size_t limit) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : c.flows(limit)) {
    const FlowEntry& e = f.entry;
    out.push_back({{"client", f.key.client.to_string()},
                   {"client_port", f.key.client_port},
                   {"server", f.key.server.to_string()},
                   {"server_port", f.key.server_port},
                   {"state", std::string(to_string(e.state))},
                   {"rtt_ms", std::chrono::duration<double, std::milli>(e.rtt).count()},
                   {"channel", path_json(e.channel_packets, e.channel_bytes)},
                   {"native", path_json(e.native_packets, e.native_bytes)},
                   {"inbound", path_json(e.inbound_packets, e.inbound_bytes)}});
  }
  return out;
}

std::string metrics_text(const nlohmann::json& s) {
  std::string out;
  // One HELP/TYPE header per metric, then its samples ({label="value"} -> value).
  auto metric = [&out](const char* name, const char* type, const char* help,
                       std::initializer_list<std::pair<std::string, nlohmann::json>> samples) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [labels, v] : samples) out += name + labels + " " + v.dump() + "\n";
  };
  const auto& p = s["paths"];
  metric("quicstep_path_packets_total", "counter",
         "Outbound packets per path, kernel counters (kernel and daemon decisions)",
         {{"{path=\"channel\"}", p["channel"]["packets"]},
          {"{path=\"native\"}", p["native"]["packets"]}});
  metric("quicstep_path_bytes_total", "counter", "Outbound IP bytes per path, kernel counters",
         {{"{path=\"channel\"}", p["channel"]["bytes"]},
          {"{path=\"native\"}", p["native"]["bytes"]}});
  metric("quicstep_path_in_bytes_total", "counter", "Inbound IP bytes per path, kernel counters",
         {{"{path=\"channel\"}", p["channel"]["in_bytes"]},
          {"{path=\"native\"}", p["native"]["in_bytes"]}});
  metric("quicstep_channel_load_ratio", "gauge",
         "Channel bytes / (channel + native) bytes, both directions",
         {{"", s["channel_load_ratio"]}});
  metric("quicstep_flows_tracked", "gauge", "QUIC flows tracked by the classifier",
         {{"", s["flows"]["tracked"]}});
  const auto& w = s["watchdog"];
  metric("quicstep_watchdog_events_total", "counter", "Migration watchdog events",
         {{"{event=\"moved_native\"}", w["moved_native"]},
          {"{event=\"confirmed\"}", w["confirmed"]},
          {"{event=\"failed_back\"}", w["failed_back"]},
          {"{event=\"pinned_by_cache\"}", w["pinned_by_cache"]},
          {"{event=\"quiet_at_bound\"}", w["quiet_at_bound"]}});
  metric("quicstep_native_switch_waits_total", "counter",
         "Moved flows whose first native packets waited for the Finished",
         {{"", s["native_switch"]["switch_waits"]}});
  metric("quicstep_native_switch_wait_seconds_total", "counter", "The sum of those waits",
         {{"", s["native_switch"]["wait_ms_total"].get<double>() / 1000.0}});
  if (s.contains("healing") && s["healing"].contains("pieces")) {
    // Self-healing: per piece of kernel state the daemon owns (healer.hpp).
    const auto& pieces = s["healing"]["pieces"];
    auto per_piece = [&](const char* name, const char* type, const char* help, const char* key) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
      for (const auto& [piece, v] : pieces.items()) {
        const std::string k = key;
        const nlohmann::json value =
            k == "ok"                 ? nlohmann::json(v["state"] == "ok" ? 1 : 0)
            : k == "last_recovery_ms" ? nlohmann::json(v[key].get<double>() / 1000.0)
                                      : v[key];
        out += std::string(name) + "{piece=\"" + piece + "\"} " + value.dump() + "\n";
      }
    };
    per_piece("quicstep_heal_piece_ok", "gauge",
              "1 while the piece of kernel state is in place, 0 while missing (failed closed)",
              "ok");
    per_piece("quicstep_heal_removals_total", "counter",
              "Times the piece was found removed or changed by another tool", "removals");
    per_piece("quicstep_heal_restores_total", "counter", "Times the daemon restored the piece",
              "restores");
    per_piece("quicstep_heal_failures_total", "counter", "Restores of the piece that failed",
              "failures");
    per_piece("quicstep_heal_contested_total", "counter",
              "Restores deferred by the back-off (another tool keeps removing the piece)",
              "contested");
    per_piece("quicstep_heal_last_recovery_seconds", "gauge",
              "From the piece found missing to restored, the last time", "last_recovery_ms");
  }
  if (s.contains("channel") && s["channel"].contains("up")) {
    metric("quicstep_channel_up", "gauge",
           "1 while the channel is up (its device; a tproxy channel: the proxy listens)",
           {{"", s["channel"]["up"].get<bool>() ? 1 : 0}});
    metric("quicstep_channel_downs_total", "counter",
           "Times the channel went down (its device, or a tproxy channel's proxy)",
           {{"", s["channel"]["downs"]}});
  }
  if (s.contains("channel") && s["channel"].contains("health")) {
    const auto& ch = s["channel"];
    const std::string health = ch["health"].get<std::string>();
    auto is = [&](const char* state) { return nlohmann::json(health == state ? 1 : 0); };
    metric("quicstep_channel_health", "gauge",
           "1 for the channel's health now (WireGuard's handshake age and traffic)",
           {{"{state=\"working\"}", is("working")},
            {"{state=\"idle\"}", is("idle")},
            {"{state=\"unanswered\"}", is("unanswered")},
            {"{state=\"down\"}", is("down")},
            {"{state=\"unknown\"}", is("unknown")}});
    metric("quicstep_channel_unanswered_total", "counter",
           "Times the channel sent for 20 s and received nothing",
           {{"", ch.value("unanswered_episodes", 0)}});
    if (ch.contains("handshake_age_s") && ch["handshake_age_s"].is_number()) {
      metric("quicstep_channel_handshake_age_seconds", "gauge",
             "Seconds since the channel's latest WireGuard handshake",
             {{"", ch["handshake_age_s"]}});
    }
  }
  if (s.contains("routed") && s["routed"].contains("source_changes")) {
    metric("quicstep_native_source_changes_total", "counter",
           "Times the routed path's channel route followed a new native source address",
           {{"", s["routed"]["source_changes"]}});
  }
  const auto& q = s["queues"];
  metric("quicstep_queue_packets_total", "counter", "Packets queued to the daemon",
         {{"{queue=\"outbound\"}", q["outbound"]["packets"]},
          {"{queue=\"inbound\"}", q["inbound"]["packets"]}});
  metric("quicstep_queue_enobufs_total", "counter", "Queue receive overruns (messages lost)",
         {{"{queue=\"outbound\"}", q["outbound"]["enobufs"]},
          {"{queue=\"inbound\"}", q["inbound"]["enobufs"]}});
  return out;
}

}  // namespace quicstep::client::daemon
