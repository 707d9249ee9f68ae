#include "client/routing.hpp"

#include <cstdio>

#include "client/process.hpp"

namespace quicstep::client {
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

int remove_routing(const RoutingSpec& s) {
  int removed = 0;
  const std::uint32_t count = 2 * static_cast<std::uint32_t>(s.channel_marks.size());
  for (const char* fam : {"-4", "-6"}) {
    for (std::uint32_t p = s.priority; p < s.priority + count; ++p) {
      // At most a few duplicates: bounded loop.
      for (int i = 0; i < 8; ++i) {
        auto r = run_process({"ip", fam, "rule", "del", "priority", std::to_string(p)});
        if (!r.ok()) break;
        ++removed;
      }
    }
  }
  return removed;
}

std::string InstalledRouting::install(const RoutingSpec& spec) {
  remove();
  spec_ = spec;
  remove_routing(spec_);  // leftovers of a crash
  installed_ = true;
  for (const auto& cmd : routing_commands(spec_)) {
    auto r = run_process(cmd);
    if (!r.ok()) {
      std::string why = describe(cmd, r);
      remove();
      return why;
    }
  }
  return {};
}

void InstalledRouting::remove() {
  if (!installed_) return;
  installed_ = false;
  remove_routing(spec_);
}

}  // namespace quicstep::client
