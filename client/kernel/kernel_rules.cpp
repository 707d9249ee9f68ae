#include "client/kernel/kernel_rules.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "client/kernel/channel_icmp_rules.hpp"
#include "client/kernel/nft_queue_rules.hpp"
#include "net/process.hpp"

namespace quicstep::client::kernel {
namespace {

// Removes this family's tagged NFQUEUE rules, and the user chains of earlier versions
// (QUICSTEP_OUT/QUICSTEP_IN, listed as "-N QUICSTEP_OUT"). The failure names what stayed.
common::Outcome remove_iptables(const char* save_tool, const char* restore_tool) {
  auto listing = net::run_process({save_tool, "-t", "raw", "-S"});
  if (!listing.ok()) return {};  // no raw table: nothing of ours
  std::string why;
  auto outcome = [&why]() -> common::Outcome {
    if (why.empty()) return {};
    return common::Failure(why);
  };
  if (std::string text = iptables_remove_text(listing.output); !text.empty()) {
    auto r = net::run_process({restore_tool, "--noflush"}, text);
    if (!r.ok()) why = net::describe({restore_tool, "--noflush"}, r);
  }
  if (listing.output.find("-N QUICSTEP_OUT") == std::string::npos) return outcome();
  auto r = net::run_process({restore_tool, "--noflush"}, iptables_remove_legacy_text());
  if (r.ok()) return outcome();
  // A partial leftover (hook present, chain absent, ...): remove piece by piece.
  for (auto args : std::vector<std::vector<std::string>>{
           {"-t", "raw", "-D", "OUTPUT", "-j", "QUICSTEP_OUT"},
           {"-t", "raw", "-D", "PREROUTING", "-j", "QUICSTEP_IN"},
           {"-t", "raw", "-F", "QUICSTEP_OUT"}, {"-t", "raw", "-F", "QUICSTEP_IN"},
           {"-t", "raw", "-X", "QUICSTEP_OUT"}, {"-t", "raw", "-X", "QUICSTEP_IN"}}) {
    args.insert(args.begin(), save_tool);
    net::run_process(args);
  }
  auto after = net::run_process({save_tool, "-t", "raw", "-S"});
  if (after.ok() && after.output.find("-N QUICSTEP_OUT") != std::string::npos) {
    why += (why.empty() ? "" : "; ") + net::describe({restore_tool, "--noflush"}, r);
  }
  return outcome();
}

// iptables-nft leaves its `raw` table behind, with empty base chains: delete it when
// nothing but the two default policies is left (invariant 3), never when others use it.
void remove_empty_raw_table(const char* tool, const char* family) {
  auto r = net::run_process({tool, "-t", "raw", "-S"});
  if (!r.ok()) return;
  std::istringstream lines(r.output);
  int other = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line != "-P PREROUTING ACCEPT" && line != "-P OUTPUT ACCEPT" && !line.empty()) ++other;
  }
  if (other == 0) net::run_process({"nft", "delete", "table", family, "raw"});
}

}  // namespace

common::Outcome remove_kernel_rules(std::string_view table) {
  const common::Outcome v4 = remove_iptables("iptables-nft", "iptables-nft-restore");
  const common::Outcome v6 = remove_iptables("ip6tables-nft", "ip6tables-nft-restore");
  remove_empty_raw_table("iptables-nft", "ip");
  remove_empty_raw_table("ip6tables-nft", "ip6");
  auto r = net::run_process({"nft", "-f", "-"}, delete_table_text(table));
  std::string out = v4 ? std::string() : v4.error().message;
  if (!v6) out += (out.empty() ? "" : "; ") + v6.error().message;
  if (!r.ok()) out += (out.empty() ? "" : "; ") + net::describe({"nft", "-f", "-"}, r);
  if (out.empty()) return {};
  return common::Failure(out);
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
  auto r = net::run_process({"nft", "-j", "list", "table", "inet", std::string(table)});
  auto out = r.ok() ? parse_kernel_counters(r.output) : std::map<std::string, KernelCounter>{};
  auto dev = net::run_process({"nft", "-j", "list", "table", "netdev", std::string(table)});
  if (dev.ok()) {
    for (const auto& [name, c] : parse_kernel_counters(dev.output)) {
      out[name].packets += c.packets;
      out[name].bytes += c.bytes;
    }
  }
  return out;
}

common::Outcome InstalledRules::install(const RulesetSpec& spec) {
  table_ = spec.table;
  auto r = net::run_process({"nft", "-f", "-"}, ruleset_text(spec));
  if (!r.ok()) {
    // The transaction failed as a whole: an older table (if any) is untouched.
    return common::Failure(net::describe({"nft", "-f", "-"}, r));
  }
  installed_ = true;
  // The inbound queue rules: a second transaction (nft cannot write them). Until it lands,
  // a watched answer is marked but not queued: accepted, as if no daemon listened.
  NftNetlink netlink;
  if (auto done =
          append_queue_rules(netlink, table_, inbound_queue_chains(spec), spec.queue_inbound);
      !done) {
    remove();
    return done;
  }
  // The routed path's hold at the switch: until it lands, the switching set is empty.
  if (auto done = append_queue_rules(netlink, table_, hold_queue_chains(spec), spec.queue_outbound);
      !done) {
    remove();
    return done;
  }
  // Stateless: ICMP errors through the channel get their quoted source back (the same way).
  if (spec.stateless) {
    if (auto done = insert_icmp_error_rules(netlink, table_, kChannelIngressChain, spec.tunnel_v4,
                                            spec.tunnel_v6);
        !done) {
      remove();
      return done;
    }
  }
  const char* tools[2][2] = {{"iptables-nft", "iptables-nft-restore"},
                             {"ip6tables-nft", "ip6tables-nft-restore"}};
  for (const auto& t : tools) {
    if (spec.routed) {
      (void)remove_iptables(t[0], t[1]);  // a reload from the queue path; best effort
      continue;
    }
    // Replace: unhook the old chains first (between the two, queued marks stay unqueued
    // and go to the channel: safe), then one transaction per family.
    (void)remove_iptables(t[0], t[1]);  // best effort: the restore below replaces ours
    auto q = net::run_process({t[1], "--noflush"}, iptables_install_text(spec));
    if (!q.ok()) {
      std::string why = net::describe({t[1], "--noflush"}, q);
      remove();
      return common::Failure(why);
    }
  }
  return {};
}

void InstalledRules::remove() {
  if (!installed_) return;
  installed_ = false;
  (void)remove_kernel_rules(table_);  // best effort: `quicstepd --cleanup` reports what stays
}

}  // namespace quicstep::client::kernel
