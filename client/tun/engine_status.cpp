#include "client/tun/engine_status.hpp"

namespace quicstep::client::tun {
namespace {

nlohmann::json traffic(const TrafficCounters& out, const TrafficCounters& in) {
  return {{"packets", out.packets}, {"bytes", out.bytes},
          {"in_packets", in.packets}, {"in_bytes", in.bytes}};
}

}  // namespace

nlohmann::json engine_status_json(const EngineCore& engine, const TrafficCounters& bypassed) {
  const EngineCounters& e = engine.counters();
  const core::Counters& c = engine.classifier().counters();
  nlohmann::json j;
  const TrafficCounters to_native{e.to_native.packets + bypassed.packets,
                                  e.to_native.bytes + bypassed.bytes};
  j["paths"] = {{"channel", traffic(e.to_channel, e.from_channel)},
                {"native", traffic(to_native, e.from_native)}};
  const double channel = static_cast<double>(e.to_channel.bytes + e.from_channel.bytes);
  const double total = channel + static_cast<double>(to_native.bytes + e.from_native.bytes);
  j["channel_load_ratio"] = total > 0 ? channel / total : 0.0;
  j["flows"] = {{"tracked", engine.classifier().flow_count()},
                {"created", c.flows_created},
                {"evicted", c.flows_evicted},
                {"expired", c.flows_expired}};
  j["watchdog"] = {{"moved_native", c.moved_native},
                   {"confirmed", c.confirmed},
                   {"failed_back", c.failed_back},
                   {"pinned_by_cache", c.pinned_by_cache},
                   {"quiet_at_bound", c.quiet_at_bound},
                   {"non_migrating_destinations", engine.classifier().destinations().size()},
                   {"events_lost", c.events_lost}};
  j["preferred_address"] = {{"destinations", engine.classifier().preferred_addresses().destinations()},
                            {"client_moves", c.preferred_address_moves},
                            {"after_move", c.preferred_address_after_move},
                            {"held_flows", c.held_for_preferred_address}};
  j["native_switch"] = {{"switch_waits", c.switch_waits},
                        {"wait_ms_total", static_cast<double>(c.switch_wait_ns) / 1e6},
                        {"rtt_samples", c.rtt_samples}};
  // The channel's resolvers (channel_dns.hpp) and the queries sent there instead of their own.
  const ChannelDns& dns = engine.channel_dns();
  nlohmann::json resolvers = nlohmann::json::array();
  for (const auto* r : {&dns.v4(), &dns.v6()}) {
    if (*r) resolvers.push_back((*r)->to_string());
  }
  j["channel"] = {{"dns", resolvers}, {"dns_redirected", dns.redirected()},
                  {"dns_answered", dns.answered()},
                  {"dns_sources_renamed", dns.sources_renamed()},
                  {"dns_answers_to_source", dns.answers_to_source()}};
  j["relays"] = {{"open", engine.relays().size()},
                 {"capacity", engine.relays().capacity()},
                 {"opened", e.relays_opened},
                 {"closed", e.relays_closed},
                 {"evicted", e.relays_evicted},
                 {"open_failed", e.relay_open_failed},
                 {"unknown", e.relay_unknown}};
  j["engine"] = {{"from_tun", traffic(e.from_tun, {})},
                 {"malformed", e.malformed},
                 {"dropped", e.dropped},
                 {"held", e.held},
                 {"hold_refused", e.hold_refused},
                 {"native_not_udp", e.native_not_udp},
                 {"reply_too_large", e.reply_too_large},
                 {"network_changes", e.network_changes}};
  return j;
}

}  // namespace quicstep::client::tun
