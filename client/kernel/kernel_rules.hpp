// The installed kernel half: the nft table, its inbound queue rules and the iptables-nft
// outbound queue rule of nft_rules.hpp, put in place by `nft -f`, a netlink transaction
// (nft_queue_rules.hpp) and `iptables-nft-restore --noflush` (each one atomic transaction),
// removed by the destructor (RAII) and by remove_kernel_rules() after a crash. Also the
// kernel's counters (flow-set changes: nft_set_writer.hpp).
// It spawns programs and blocks for a few ms: control plane only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "client/kernel/nft_rules.hpp"
#include "common/error.hpp"

namespace quicstep::client::kernel {

// Removes the table and the queue rules, present or not. Failure: what did not go, joined by
// "; " (each failing command and its output).
common::Outcome remove_kernel_rules(std::string_view table);

// The named counters of the table: name -> {packets, bytes}. Errors: empty map when the
// table is absent or nft fails.
struct KernelCounter {
  std::uint64_t packets = 0, bytes = 0;
};
std::map<std::string, KernelCounter> read_kernel_counters(std::string_view table);
// Parses `nft -j list table inet T` output (unit-tested): named counter objects, plus
// anonymous rule counters summed under the rule's comment (a name may have both).
std::map<std::string, KernelCounter> parse_kernel_counters(const std::string& json);

class InstalledRules {
 public:
  InstalledRules() = default;
  InstalledRules(const InstalledRules&) = delete;
  InstalledRules& operator=(const InstalledRules&) = delete;
  ~InstalledRules() { remove(); }

  // Installs or atomically replaces the table, then its inbound queue rules, then the
  // outbound queue rule (v4 and v6). Failure: the failing command and its output; then
  // nothing of it stays.
  common::Outcome install(const RulesetSpec& spec);
  void remove();
  bool installed() const { return installed_; }

 private:
  std::string table_;
  bool installed_ = false;
};

}  // namespace quicstep::client::kernel
