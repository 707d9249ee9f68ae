// Policy routing of the channel: `ip rule`s that send packets carrying the channel marks to
// the channel's routing table, each followed by a fail-closed `unreachable` rule so that a
// missing WireGuard interface or route never lets a channel packet fall through to the main
// table (invariant 1). IPv4 and IPv6. Installed before the nft table, removed after it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace quicstep::client {

struct RoutingSpec {
  std::vector<std::uint32_t> channel_marks;  // marks routed to the channel (value/mask)
  std::uint32_t mark_mask = 0xff;
  std::uint32_t table = 51820;
  std::uint32_t priority = 10100;  // first rule's priority; two per mark, consecutive
};

// The `ip rule` argument lists that install_routing runs, per family ("-4", "-6").
std::vector<std::vector<std::string>> routing_commands(const RoutingSpec& spec);

// Removes every rule at the priorities the spec uses (a crash may have left them, maybe
// twice). Never fails: rules that are absent are skipped. Returns how many were removed.
int remove_routing(const RoutingSpec& spec);

// RAII: installs the rules (after removing leftovers at the same priorities) and removes
// them in its destructor. install() errors: the failing command and its output; what was
// installed before the failure is removed.
class InstalledRouting {
 public:
  InstalledRouting() = default;
  InstalledRouting(const InstalledRouting&) = delete;
  InstalledRouting& operator=(const InstalledRouting&) = delete;
  ~InstalledRouting() { remove(); }

  // Empty string on success, else the reason.
  std::string install(const RoutingSpec& spec);
  void remove();

 private:
  RoutingSpec spec_;
  bool installed_ = false;
};

}  // namespace quicstep::client
