#include "client/kernel/routing.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "client/kernel/fib_rule_writer.hpp"
#include "net/process.hpp"

namespace quicstep::client::kernel {
namespace {

std::string mark_text(std::uint32_t mark, std::uint32_t mask) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%x/0x%x", mark, mask);
  return buf;
}

}  // namespace

std::vector<std::vector<std::string>> routing_commands(const RoutingSpec& s) {
  std::vector<std::vector<std::string>> cmds;
  for (const char* fam : {"-4", "-6"}) {
    std::uint32_t prio = s.priority;
    for (auto mark : s.channel_marks) {
      const std::string m = mark_text(mark, s.mark_mask);
      cmds.push_back({"ip", fam, "rule", "add", "fwmark", m, "lookup", std::to_string(s.table),
                      "priority", std::to_string(prio++)});
      // Fail closed: reached only when the channel table has no route for the packet.
      cmds.push_back({"ip", fam, "rule", "add", "fwmark", m, "unreachable", "priority",
                      std::to_string(prio++)});
    }
  }
  return cmds;
}

bool routing_marks_differ(const RoutingSpec& a, const RoutingSpec& b) {
  return a.channel_marks != b.channel_marks || a.mark_mask != b.mark_mask ||
         a.native_mark != b.native_mark || a.quic_channel_mark != b.quic_channel_mark ||
         a.forwarded_mark != b.forwarded_mark;
}

std::vector<std::string> routed_channel_route(const RoutingSpec& s, const char* family,
                                              const std::string& source) {
  std::vector<std::string> cmd{"ip", family, "route", source.empty() ? "del" : "replace"};
  // IPv6 needs the route's type to deliver a looped-back packet locally; IPv4 does not (an
  // output route through lo delivers locally) and must not have it: the reverse-path check
  // of a moved flow's native answers finds this route by its ports, and loose rp_filter
  // (systemd's default) drops a packet whose source routes as local.
  if (s.channel_local && std::string_view(family) == "-6") cmd.push_back("local");
  cmd.insert(cmd.end(), {"default", "dev", s.channel_interface});
  if (!source.empty()) cmd.insert(cmd.end(), {"src", source});
  cmd.insert(cmd.end(), {"table", std::to_string(s.routed_table)});
  return cmd;
}

std::vector<std::vector<std::string>> routed_routing_commands(const RoutingSpec& s) {
  std::vector<std::vector<std::string>> cmds;
  const std::string table = std::to_string(s.routed_table);
  struct Family {
    const char* flag;
    const std::string* source;
    const std::vector<std::string>* exempt;
    const std::vector<std::string>* native;
  };
  // (Named fields, not structured bindings: clang before 16 cannot capture those.)
  for (const Family& f : {Family{"-4", &s.source_v4, &s.exempt_v4, &s.native_v4},
                          Family{"-6", &s.source_v6, &s.exempt_v6, &s.native_v6}}) {
    const char* fam = f.flag;
    const std::string* source = f.source;
    const std::vector<std::string>* exempt = f.exempt;
    const std::vector<std::string>* native = f.native;
    if (!source->empty()) cmds.push_back(routed_channel_route(s, fam, *source));
    if (s.forwarded_mark != 0) {
      cmds.push_back({"ip", fam, "route", "replace", "local", "default", "dev", "lo", "table",
                      std::to_string(s.table)});
      cmds.push_back({"ip", fam, "rule", "add", "fwmark", mark_text(s.forwarded_mark, s.mark_mask),
                      "lookup", std::to_string(s.table), "priority", std::to_string(s.priority)});
    }
    // The flows moved native (their packets marked by the routed table's chains).
    cmds.push_back({"ip", fam, "rule", "add", "fwmark", mark_text(s.native_mark, s.mark_mask),
                    "lookup", "main", "priority", std::to_string(s.flow_priority())});
    std::uint32_t prio = s.flow_priority() + 1;
    enum class To { channel, main, unreachable };
    auto rule = [&](std::vector<std::string> selector, To to, std::uint32_t p) {
      std::vector<std::string> c{"ip", fam, "rule", "add"};
      c.insert(c.end(), selector.begin(), selector.end());
      if (to == To::unreachable) {
        c.push_back("unreachable");
      } else {
        c.insert(c.end(), {"lookup", to == To::main ? "main" : table});
      }
      c.insert(c.end(), {"priority", std::to_string(p)});
      cmds.push_back(std::move(c));
    };
    if (s.quic_channel_mark != 0) {
      // A device channel: the host's own QUIC is routed natively (its second rule, for each
      // packet of a moved flow: a short walk), and the route chain marks the packets of the
      // flows not moved for the channel (first, so that they never meet the second).
      const std::string m = mark_text(s.quic_channel_mark, s.mark_mask);
      rule({"fwmark", m}, To::channel, prio);
      rule({"fwmark", m}, To::unreachable, prio + 1);
      for (auto port : s.quic_ports) {
        rule({"iif", "lo", "ipproto", "udp", "dport", std::to_string(port)}, To::main, prio + 2);
      }
      prio += 3;
    }
    // The channel's own packets never enter it; DNS looked up through a native device only
    // (bound_devices) finds its route in main, and the route chain re-routes it.
    for (const auto& a : *exempt) rule({"to", a}, To::main, prio);
    if (s.dns_to_channel && !s.channel_local) {
      for (const auto& dev : s.bound_devices) {
        rule({"ipproto", "udp", "dport", "53", "oif", dev}, To::main, prio);
      }
    }
    ++prio;
    // DNS, before the native prefixes: a LAN resolver forwards names to the ISP.
    for (const char* proto : {"udp", "tcp"}) {
      if (s.dns_to_channel) {
        rule({"ipproto", proto, "dport", "53"}, To::channel, prio);
        rule({"ipproto", proto, "dport", "53"}, To::unreachable, prio + 1);
      }
      prio += 2;
    }
    for (const auto& a : *native) rule({"to", a}, To::main, prio);
    ++prio;
    if (s.tcp_to_channel) {
      rule({"ipproto", "tcp"}, To::channel, prio);
      rule({"ipproto", "tcp"}, To::unreachable, prio + 1);
    }
    prio += 2;
    // QUIC by port: a tproxy channel's, and with a device channel what a forwarding host
    // forwards (its moved flows carry native_mark, from the prerouting chain).
    for (auto port : s.quic_ports) {
      rule({"ipproto", "udp", "dport", std::to_string(port)}, To::channel, prio);
      rule({"ipproto", "udp", "dport", std::to_string(port)}, To::unreachable, prio + 1);
    }
  }
  return cmds;
}

std::vector<std::pair<std::uint32_t, int>> routing_rule_priorities(const RoutingSpec& s,
                                                                   const char* family) {
  std::map<std::uint32_t, int> count;
  for (const auto& cmd : s.routed ? routed_routing_commands(s) : routing_commands(s)) {
    if (cmd.size() < 4 || cmd[1] != family || cmd[2] != "rule") continue;
    for (std::size_t i = 3; i + 1 < cmd.size(); ++i) {
      if (cmd[i] == "priority") ++count[static_cast<std::uint32_t>(std::stoul(cmd[i + 1]))];
    }
  }
  return {count.begin(), count.end()};
}

int remove_routing(const RoutingSpec& s) {
  int removed = 0;
  const std::uint32_t count = 2 * static_cast<std::uint32_t>(s.channel_marks.size());
  for (const char* fam : {"-4", "-6"}) {
    for (std::uint32_t p = s.priority; p < s.priority + count; ++p) {
      // At most a few duplicates: bounded loop.
      for (int i = 0; i < 8; ++i) {
        auto r = net::run_process({"ip", fam, "rule", "del", "priority", std::to_string(p)});
        if (!r.ok()) break;
        ++removed;
      }
    }
  }
  // The routed native path's rules (a config may have switched; earlier versions had one
  // per native flow at flow_priority): any number at each priority.
  FibRuleWriter writer;
  if (writer.open()) {
    for (auto family : {common::IpFamily::v4, common::IpFamily::v6}) {
      for (std::uint32_t p = s.flow_priority(); p < s.flow_priority() + s.kRoutedPriorities;
           ++p) {
        removed += writer.remove_all_at(family, p);
      }
    }
  }
  for (const char* fam : {"-4", "-6"}) {
    net::run_process({"ip", fam, "route", "flush", "table", std::to_string(s.routed_table)});
    if (s.forwarded_mark != 0) {
      net::run_process({"ip", fam, "route", "flush", "table", std::to_string(s.table)});
    }
  }
  return removed;
}

common::Outcome InstalledRouting::install(const RoutingSpec& spec) {
  remove();
  spec_ = spec;
  remove_routing(spec_);  // leftovers of a crash
  installed_ = true;
  for (const auto& cmd : spec_.routed ? routed_routing_commands(spec_) : routing_commands(spec_)) {
    auto r = net::run_process(cmd);
    if (!r.ok()) {
      std::string why = net::describe(cmd, r);
      remove();
      return common::Failure(why);
    }
  }
  return {};
}

common::Outcome InstalledRouting::restore_rules() {
  if (!installed_) return {};
  // Over netlink: the missing rules are back microseconds after the check (a forked `ip`
  // per rule would take milliseconds each, a window in which the queue path's marked packets
  // would take the main table).
  FibRuleWriter writer;
  const bool netlink = static_cast<bool>(writer.open());
  std::string why;
  for (const auto& cmd : spec_.routed ? routed_routing_commands(spec_) : routing_commands(spec_)) {
    if (cmd.size() < 3 || cmd[2] != "rule") continue;
    if (auto rule = parse_rule_command(cmd); rule && netlink) {
      // EEXIST: still there (the add is an exclusive create).
      if (const int err = writer.add(*rule); err != 0 && err != EEXIST && why.empty()) {
        why = net::describe(cmd, {-1, std::strerror(err)});
      }
      continue;
    }
    auto r = net::run_process(cmd);
    if (r.ok() || r.output.find("File exists") != std::string::npos) continue;
    if (why.empty()) why = net::describe(cmd, r);
  }
  if (why.empty()) return {};
  return common::Failure(why);
}

common::Outcome InstalledRouting::add_bound_device(const std::string& device) {
  auto& devices = spec_.bound_devices;
  if (std::find(devices.begin(), devices.end(), device) != devices.end()) return {};
  devices.push_back(device);
  return restore_rules();
}

common::Outcome InstalledRouting::remove_bound_device(const std::string& device) {
  auto& devices = spec_.bound_devices;
  const auto it = std::find(devices.begin(), devices.end(), device);
  if (it == devices.end()) return {};
  std::vector<FibRule> rules;
  if (installed_ && spec_.routed) {
    for (const auto& cmd : routed_routing_commands(spec_)) {
      const auto oif = std::find(cmd.begin(), cmd.end(), "oif");
      if (cmd[2] != "rule" || oif == cmd.end() || oif + 1 == cmd.end() || *(oif + 1) != device) {
        continue;
      }
      if (auto rule = parse_rule_command(cmd)) rules.push_back(*rule);
    }
  }
  devices.erase(it);
  if (rules.empty()) return {};
  FibRuleWriter writer;
  if (auto opened = writer.open(); !opened) return opened;
  for (const auto& rule : rules) {
    if (const int err = writer.remove(rule); err != 0 && err != ENOENT) {
      return common::Failure("ip rule del oif " + device + ": " + std::strerror(err));
    }
  }
  return {};
}

void InstalledRouting::remove() {
  if (!installed_) return;
  installed_ = false;
  remove_routing(spec_);
}

}  // namespace quicstep::client::kernel
