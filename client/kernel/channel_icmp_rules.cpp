#include "client/kernel/channel_icmp_rules.hpp"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace quicstep::client::kernel {
namespace {

// Room for one rule message: header, names, eleven small expressions (up to three carry
// a 16-byte value).
constexpr std::size_t kBytesPerRule = 1024;

// One error type of one family: where its quoted addresses lie (offsets from the ICMP header).
struct IcmpErrorRule {
  std::uint16_t ethertype;         // ETH_P_IP or ETH_P_IPV6
  std::uint8_t protocol;           // IPPROTO_ICMP or IPPROTO_ICMPV6
  std::uint8_t type;               // the error's ICMP type
  std::uint32_t quoted_source;     // offset of the quoted header's source address
  std::uint32_t quoted_dest;       // offset of its destination address
  std::vector<std::uint8_t> tunnel;  // the tunnel address (4 or 16 bytes)
  const char* map;                 // remote address -> local address
};

void add_meta(nftnl_rule* rule, std::uint32_t key) {
  nftnl_expr* e = nftnl_expr_alloc("meta");
  nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
  nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
  nftnl_rule_add_expr(rule, e);
}

void add_equal(nftnl_rule* rule, const void* data, std::uint32_t len) {
  nftnl_expr* e = nftnl_expr_alloc("cmp");
  nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
  nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
  nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
  nftnl_rule_add_expr(rule, e);
}

void add_load(nftnl_rule* rule, std::uint32_t offset, std::uint32_t len) {
  nftnl_expr* e = nftnl_expr_alloc("payload");
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, NFT_PAYLOAD_TRANSPORT_HEADER);
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
  nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
  nftnl_rule_add_expr(rule, e);
}

std::size_t build_rule(char* buf, std::uint32_t seq, const std::string& table,
                       const std::string& chain, const IcmpErrorRule& r) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, NFPROTO_NETDEV);
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, table.c_str());
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, chain.c_str());
  const auto len = static_cast<std::uint32_t>(r.tunnel.size());
  // The family, the protocol (the transport header is where the ICMP header starts), the type.
  add_meta(rule.get(), NFT_META_PROTOCOL);
  const std::uint16_t ethertype = htons(r.ethertype);
  add_equal(rule.get(), &ethertype, sizeof ethertype);
  add_meta(rule.get(), NFT_META_L4PROTO);
  add_equal(rule.get(), &r.protocol, 1);
  add_load(rule.get(), 0, 1);
  add_equal(rule.get(), &r.type, 1);
  // The quoted packet left through the channel: its source is the tunnel address.
  add_load(rule.get(), r.quoted_source, len);
  add_equal(rule.get(), r.tunnel.data(), len);
  // The local address the flow used, by the quoted destination (no element: no match).
  add_load(rule.get(), r.quoted_dest, len);
  nftnl_expr* lookup = nftnl_expr_alloc("lookup");
  nftnl_expr_set_u32(lookup, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
  nftnl_expr_set_u32(lookup, NFTNL_EXPR_LOOKUP_DREG, NFT_REG_1);
  nftnl_expr_set_str(lookup, NFTNL_EXPR_LOOKUP_SET, r.map);
  nftnl_rule_add_expr(rule.get(), lookup);
  // Stored as the quoted source, the ICMP checksum (offset 2) updated for the change.
  nftnl_expr* store = nftnl_expr_alloc("payload");
  nftnl_expr_set_u32(store, NFTNL_EXPR_PAYLOAD_SREG, NFT_REG_1);
  nftnl_expr_set_u32(store, NFTNL_EXPR_PAYLOAD_BASE, NFT_PAYLOAD_TRANSPORT_HEADER);
  nftnl_expr_set_u32(store, NFTNL_EXPR_PAYLOAD_OFFSET, r.quoted_source);
  nftnl_expr_set_u32(store, NFTNL_EXPR_PAYLOAD_LEN, len);
  nftnl_expr_set_u32(store, NFTNL_EXPR_PAYLOAD_CSUM_TYPE, NFT_PAYLOAD_CSUM_INET);
  nftnl_expr_set_u32(store, NFTNL_EXPR_PAYLOAD_CSUM_OFFSET, 2);
  nftnl_rule_add_expr(rule.get(), store);
  // No NLM_F_APPEND: inserted at the head, before the rules that end the chain.
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWRULE, NFPROTO_NETDEV,
                                        NLM_F_CREATE | NLM_F_ACK, seq);
  nftnl_rule_nlmsg_build_payload(nlh, rule.get());
  return NLMSG_ALIGN(nlh->nlmsg_len);
}

}  // namespace

common::Outcome insert_icmp_error_rules(NftNetlink& netlink, std::string_view table,
                                        std::string_view chain, const std::string& tunnel_v4,
                                        const std::string& tunnel_v6) {
  std::vector<IcmpErrorRule> rules;
  if (!tunnel_v4.empty()) {
    std::vector<std::uint8_t> a(4);
    if (inet_pton(AF_INET, tunnel_v4.c_str(), a.data()) != 1) {
      return common::Failure("ICMP error rules: not an IPv4 address: " + tunnel_v4);
    }
    // ICMP header 8 bytes, then the quoted IPv4 header: source at 12, destination at 16.
    // Destination unreachable (port unreachable, fragmentation needed), time exceeded,
    // parameter problem.
    for (std::uint8_t type : {3, 11, 12}) {
      rules.push_back({ETH_P_IP, IPPROTO_ICMP, type, 20, 24, a, "revany4"});
    }
  }
  if (!tunnel_v6.empty()) {
    std::vector<std::uint8_t> a(16);
    if (inet_pton(AF_INET6, tunnel_v6.c_str(), a.data()) != 1) {
      return common::Failure("ICMP error rules: not an IPv6 address: " + tunnel_v6);
    }
    // ICMPv6 header 8 bytes, then the quoted IPv6 header: source at 8, destination at 24.
    // Destination unreachable, packet too big, time exceeded, parameter problem.
    for (std::uint8_t type : {1, 2, 3, 4}) {
      rules.push_back({ETH_P_IPV6, IPPROTO_ICMPV6, type, 16, 32, a, "revany6"});
    }
  }
  if (rules.empty()) return {};
  if (auto opened = netlink.open(); !opened) return opened;
  const std::string table_name(table), chain_name(chain);
  const int err = netlink.transaction(
      rules.size(), kBytesPerRule, [&](char* buf, std::uint32_t seq, std::size_t i) {
        return build_rule(buf, seq, table_name, chain_name, rules[i]);
      });
  if (err == 0) return {};
  return common::Failure("ICMP error rules in netdev " + table_name + " " + chain_name + ": " +
                         std::strerror(err));
}

}  // namespace quicstep::client::kernel
