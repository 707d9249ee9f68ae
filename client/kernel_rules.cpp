#include "client/kernel_rules.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "client/channel_icmp_rules.hpp"
#include "client/nft_queue_rules.hpp"
#include "client/process.hpp"

namespace quicstep::client {
namespace {

// Removes this family's tagged NFQUEUE rules, and the user chains of earlier versions
// (QUICSTEP_OUT/QUICSTEP_IN, listed as "-N QUICSTEP_OUT").
std::string remove_iptables(const char* save_tool, const char* restore_tool) {
  auto listing = run_process({save_tool, "-t", "raw", "-S"});
  if (!listing.ok()) return {};  // no raw table: nothing of ours
  std::string why;
  if (std::string text = iptables_remove_text(listing.output); !text.empty()) {
    auto r = run_process({restore_tool, "--noflush"}, text);
    if (!r.ok()) why = describe({restore_tool, "--noflush"}, r);
  }
  if (listing.output.find("-N QUICSTEP_OUT") == std::string::npos) return why;
  auto r = run_process({restore_tool, "--noflush"}, iptables_remove_legacy_text());
  if (r.ok()) return why;
  // A partial leftover (hook present, chain absent, ...): remove piece by piece.
  for (auto args : std::vector<std::vector<std::string>>{
           {"-t", "raw", "-D", "OUTPUT", "-j", "QUICSTEP_OUT"},
           {"-t", "raw", "-D", "PREROUTING", "-j", "QUICSTEP_IN"},
           {"-t", "raw", "-F", "QUICSTEP_OUT"}, {"-t", "raw", "-F", "QUICSTEP_IN"},
           {"-t", "raw", "-X", "QUICSTEP_OUT"}, {"-t", "raw", "-X", "QUICSTEP_IN"}}) {
    args.insert(args.begin(), save_tool);
    run_process(args);
  }
  auto after = run_process({save_tool, "-t", "raw", "-S"});
  if (after.ok() && after.output.find("-N QUICSTEP_OUT") != std::string::npos) {
    why += (why.empty() ? "" : "; ") + describe({restore_tool, "--noflush"}, r);
  }
  return why;
}

// iptables-nft leaves its `raw` table behind, with empty base chains: delete it when
// nothing but the two default policies is left (invariant 3), never when others use it.
void remove_empty_raw_table(const char* tool, const char* family) {
  auto r = run_process({tool, "-t", "raw", "-S"});
  if (!r.ok()) return;
  std::istringstream lines(r.output);
  int other = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line != "-P PREROUTING ACCEPT" && line != "-P OUTPUT ACCEPT" && !line.empty()) ++other;
  }
  if (other == 0) run_process({"nft", "delete", "table", family, "raw"});
}

}  // namespace

std::string remove_kernel_rules(std::string_view table) {
  std::string why = remove_iptables("iptables-nft", "iptables-nft-restore");
  std::string why6 = remove_iptables("ip6tables-nft", "ip6tables-nft-restore");
  remove_empty_raw_table("iptables-nft", "ip");
  remove_empty_raw_table("ip6tables-nft", "ip6");
  auto r = run_process({"nft", "-f", "-"}, delete_table_text(table));
  std::string out = why;
  if (!why6.empty()) out += (out.empty() ? "" : "; ") + why6;
  if (!r.ok()) out += (out.empty() ? "" : "; ") + describe({"nft", "-f", "-"}, r);
  return out;
}

std::map<std::string, KernelCounter> parse_kernel_counters(const std::string& output) {
  std::map<std::string, KernelCounter> out;
  // The output interleaves stderr: nft 1.0.6 warns "stmt ops map have no json callback" for
  // the stateless rewrite's map statements (lines without braces). The document runs from
  // the first line that starts with '{' to the last '}'.
  std::size_t start = output.rfind('{', 0) == 0 ? 0 : output.find("\n{");
  const std::size_t end = output.rfind('}');
  if (start == std::string::npos || end == std::string::npos) return out;
  if (output[start] == '\n') ++start;
  if (end < start) return out;
  auto doc = nlohmann::json::parse(output.substr(start, end + 1 - start), nullptr,
                                   /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("nftables") || !doc["nftables"].is_array()) return out;
  for (const auto& item : doc["nftables"]) {
    // An anonymous counter of a rule, named by the rule's comment (the bulk path's).
    if (item.is_object() && item.contains("rule") && item["rule"].is_object()) {
      const auto& rule = item["rule"];
      if (!rule.contains("comment") || !rule["comment"].is_string() || !rule.contains("expr") ||
          !rule["expr"].is_array()) {
        continue;
      }
      for (const auto& e : rule["expr"]) {
        if (!e.is_object() || !e.contains("counter") || !e["counter"].is_object()) continue;
        const auto& c = e["counter"];
        KernelCounter& k = out[rule["comment"].get<std::string>()];
        if (c.contains("packets") && c["packets"].is_number_unsigned()) {
          k.packets += c["packets"].get<std::uint64_t>();
        }
        if (c.contains("bytes") && c["bytes"].is_number_unsigned()) {
          k.bytes += c["bytes"].get<std::uint64_t>();
        }
      }
      continue;
    }
    if (!item.is_object() || !item.contains("counter")) continue;
    const auto& c = item["counter"];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) continue;
    KernelCounter& k = out[c["name"].get<std::string>()];
    if (c.contains("packets") && c["packets"].is_number_unsigned()) {
      k.packets += c["packets"].get<std::uint64_t>();
    }
    if (c.contains("bytes") && c["bytes"].is_number_unsigned()) {
      k.bytes += c["bytes"].get<std::uint64_t>();
    }
  }
  return out;
}

std::map<std::string, KernelCounter> read_kernel_counters(std::string_view table) {
  // The whole table: its named counters and the rules' anonymous ones; plus the channel
  // device's table of stateless addressing, when there is one (same counter names: summed).
  // (The routed native path has the device's table alone.)
  auto r = run_process({"nft", "-j", "list", "table", "inet", std::string(table)});
  auto out = r.ok() ? parse_kernel_counters(r.output) : std::map<std::string, KernelCounter>{};
  auto dev = run_process({"nft", "-j", "list", "table", "netdev", std::string(table)});
  if (dev.ok()) {
    for (const auto& [name, c] : parse_kernel_counters(dev.output)) {
      out[name].packets += c.packets;
      out[name].bytes += c.bytes;
    }
  }
  return out;
}

std::string InstalledRules::install(const RulesetSpec& spec) {
  table_ = spec.table;
  auto r = run_process({"nft", "-f", "-"}, ruleset_text(spec));
  if (!r.ok()) {
    // The transaction failed as a whole: an older table (if any) is untouched.
    return describe({"nft", "-f", "-"}, r);
  }
  installed_ = true;
  // The inbound queue rules: a second transaction (nft cannot write them). Until it lands,
  // a watched answer is marked but not queued: accepted, as if no daemon listened.
  NftNetlink netlink;
  if (auto why = append_queue_rules(netlink, table_, inbound_queue_chains(spec),
                                    spec.queue_inbound);
      !why.empty()) {
    remove();
    return why;
  }
  // Stateless: ICMP errors through the channel get their quoted source back (the same way).
  if (spec.stateless) {
    if (auto why = insert_icmp_error_rules(netlink, table_, kChannelIngressChain,
                                           spec.tunnel_v4, spec.tunnel_v6);
        !why.empty()) {
      remove();
      return why;
    }
  }
  const char* tools[2][2] = {{"iptables-nft", "iptables-nft-restore"},
                             {"ip6tables-nft", "ip6tables-nft-restore"}};
  for (const auto& t : tools) {
    if (spec.routed) {
      remove_iptables(t[0], t[1]);  // a reload from the queue path
      continue;
    }
    // Replace: unhook the old chains first (between the two, queued marks stay unqueued
    // and go to the channel: safe), then one transaction per family.
    remove_iptables(t[0], t[1]);
    auto q = run_process({t[1], "--noflush"}, iptables_install_text(spec));
    if (!q.ok()) {
      std::string why = describe({t[1], "--noflush"}, q);
      remove();
      return why;
    }
  }
  return {};
}

void InstalledRules::remove() {
  if (!installed_) return;
  installed_ = false;
  remove_kernel_rules(table_);
}

}  // namespace quicstep::client
