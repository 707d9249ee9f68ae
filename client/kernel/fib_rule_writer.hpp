// FibRuleWriter: policy-routing rules (`ip rule`) over rtnetlink (libmnl), without starting
// a program. The routed native path (native_path = "routed", client/README.md) adds one rule
// per flow that moves to the native path — `to SERVER ipproto udp sport P dport Q lookup
// main` — and deletes it when the flow fails back or ends; a rule change is on the path of
// the flow's first native packets, where forking `ip` took milliseconds. The kernel bumps
// the routing generation on every rule change, so a connected socket's cached route is looked
// up again at its next send. Control plane; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/flow_key.hpp"
#include "common/ip_packet.hpp"

struct mnl_socket;

namespace quicstep::client::kernel {

struct FibRule {
  common::IpFamily family = common::IpFamily::v4;
  std::uint32_t priority = 0;
  std::uint32_t table = 254;  // main; used unless unreachable
  bool unreachable = false;
  std::uint8_t ip_proto = 0;  // 0: any
  std::uint16_t sport = 0;    // 0: any
  std::uint16_t dport = 0;    // 0: any
  bool has_dst = false;       // `to dst/dst_len`
  common::IpAddress dst;
  std::uint8_t dst_len = 0;
  std::uint32_t fwmark = 0;   // `fwmark fwmark/fwmask` when fwmask is not 0
  std::uint32_t fwmask = 0;
  std::string iif;            // `iif NAME` when not empty (`lo`: locally sent packets)
  std::string oif;            // `oif NAME` when not empty (a lookup through that device only)
};

// The rule that an `ip -4|-6 rule add ...` argument list of routing.hpp's adds (the words
// those lists use: fwmark M/MASK, iif NAME, oif NAME, to ADDR[/LEN], ipproto udp|tcp, dport N, lookup main|N,
// unreachable, priority N), so that it can be written over netlink. nullopt: another word
// or a value that does not parse.
std::optional<FibRule> parse_rule_command(const std::vector<std::string>& args);

// The rule of one flow (outbound orientation: client = this host) at `priority`, looking
// up `table`: its server address, protocol and both ports.
FibRule flow_rule(const common::FlowKey& flow, std::uint32_t priority, std::uint32_t table);

class FibRuleWriter {
 public:
  FibRuleWriter() = default;
  FibRuleWriter(const FibRuleWriter&) = delete;
  FibRuleWriter& operator=(const FibRuleWriter&) = delete;
  ~FibRuleWriter();

  // Opens the socket in the caller's network namespace. Failures: the socket's.
  common::Outcome open();
  bool is_open() const { return socket_ != nullptr; }

  // 0 or the kernel's errno (EEXIST: the same rule is there; ENOENT on delete: it is not).
  int add(const FibRule& rule);
  int remove(const FibRule& rule);
  // Deletes every rule of `family` at `priority` (whatever it selects); returns how many.
  int remove_all_at(common::IpFamily family, std::uint32_t priority);

 private:
  int request(std::uint16_t type, std::uint16_t flags, const FibRule& rule);

  mnl_socket* socket_ = nullptr;
  std::uint32_t seq_ = 1;
  std::uint32_t port_id_ = 0;
};

}  // namespace quicstep::client::kernel
