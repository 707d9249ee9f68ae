#include "client/kernel/nft_queue_rules.hpp"

#include <libmnl/libmnl.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/xt_NFQUEUE.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace quicstep::client::kernel {
namespace {

// Room for one rule message: header, table and chain names, one target expression.
constexpr std::size_t kBytesPerRule = 512;

std::size_t build_queue_rule(char* buf, std::uint32_t seq, const std::string& table,
                             const std::string& chain, std::uint16_t queue) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, NFPROTO_INET);
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, table.c_str());
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, chain.c_str());
  nftnl_expr* target = nftnl_expr_alloc("target");  // owned by the rule once added
  nftnl_expr_set_str(target, NFTNL_EXPR_TG_NAME, "NFQUEUE");
  nftnl_expr_set_u32(target, NFTNL_EXPR_TG_REV, 3);
  // libnftnl takes ownership of the target's info (and frees it): a malloc'ed copy.
  auto* info = static_cast<xt_NFQ_info_v3*>(std::calloc(1, sizeof(xt_NFQ_info_v3)));
  if (info == nullptr) throw std::bad_alloc();
  info->queuenum = queue;
  info->queues_total = 1;
  info->flags = NFQ_FLAG_BYPASS;
  nftnl_expr_set(target, NFTNL_EXPR_TG_INFO, info, sizeof(*info));
  nftnl_rule_add_expr(rule.get(), target);
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWRULE, NFPROTO_INET,
                                        NLM_F_APPEND | NLM_F_CREATE | NLM_F_ACK, seq);
  nftnl_rule_nlmsg_build_payload(nlh, rule.get());
  return NLMSG_ALIGN(nlh->nlmsg_len);
}

}  // namespace

common::Outcome append_queue_rules(NftNetlink& netlink, std::string_view table,
                                   const std::vector<std::string>& chains, std::uint16_t queue) {
  if (chains.empty()) return {};
  if (auto opened = netlink.open(); !opened) return opened;
  const std::string table_name(table);
  const int err = netlink.transaction(
      chains.size(), kBytesPerRule, [&](char* buf, std::uint32_t seq, std::size_t i) {
        return build_queue_rule(buf, seq, table_name, chains[i], queue);
      });
  if (err == 0) return {};
  return common::Failure("queue rules (xt NFQUEUE " + std::to_string(queue) + ") in inet " +
                         table_name + ": " + std::strerror(err));
}

}  // namespace quicstep::client::kernel
