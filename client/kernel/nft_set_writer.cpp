#include "client/kernel/nft_set_writer.hpp"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <cstring>
#include <memory>
#include <vector>

namespace quicstep::client::kernel {
namespace {

// A transaction's messages must fit the socket's send buffer: apply() splits larger lists.
constexpr std::size_t kOpsPerTransaction = 256;
// Room for one element message (header, table and set names, a 40-octet key, a timeout).
constexpr std::size_t kBytesPerOp = 512;

struct SetDeleter {
  void operator()(nftnl_set* s) const { nftnl_set_free(s); }
};

// Appends the message of `op` at `buf` (sequence `seq`); returns its aligned length.
std::size_t build_op(char* buf, std::string_view table, const SetElementOp& op,
                     std::uint32_t seq) {
  std::unique_ptr<nftnl_set, SetDeleter> set(nftnl_set_alloc());
  const std::string table_name(table), name = set_name(op.set, op.flow);
  nftnl_set_set_str(set.get(), NFTNL_SET_TABLE, table_name.c_str());
  nftnl_set_set_str(set.get(), NFTNL_SET_NAME, name.c_str());
  nftnl_set_elem* elem = nftnl_set_elem_alloc();  // owned by the set once added
  const std::vector<std::uint8_t> key = set_element_key(op.set, op.flow);
  nftnl_set_elem_set(elem, NFTNL_SET_ELEM_KEY, key.data(), static_cast<std::uint32_t>(key.size()));
  // watchports and routed4/6 have no timeouts
  if (op.add && op.set != FlowSet::watch_port && op.set != FlowSet::routed) {
    nftnl_set_elem_set_u64(elem, NFTNL_SET_ELEM_TIMEOUT,
                           static_cast<std::uint64_t>(op.timeout.count()) * 1000);
  }
  nftnl_set_elem_add(set.get(), elem);
  // NLM_F_CREATE without NLM_F_EXCL: adding a present element refreshes it, as `nft add`.
  const std::uint16_t flags = NLM_F_ACK | (op.add ? NLM_F_CREATE : 0);
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf, op.add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
                                        NFPROTO_INET, flags, seq);
  nftnl_set_elems_nlmsg_build_payload(nlh, set.get());
  return NLMSG_ALIGN(nlh->nlmsg_len);
}

}  // namespace

int NftSetWriter::transaction(std::string_view table, std::span<const SetElementOp> ops) {
  return netlink_.transaction(ops.size(), kBytesPerOp,
                              [&](char* buf, std::uint32_t seq, std::size_t i) {
                                return build_op(buf, table, ops[i], seq);
                              });
}

common::Result<void, NftSetWriter::Failures> NftSetWriter::apply(
    std::string_view table, std::span<const SetElementOp> ops) {
  if (!netlink_.is_open()) return Failures{static_cast<int>(ops.size()), "netlink socket not open"};
  Failures failed;
  for (std::size_t at = 0; at < ops.size(); at += kOpsPerTransaction) {
    const auto chunk = ops.subspan(at, std::min(kOpsPerTransaction, ops.size() - at));
    if (transaction(table, chunk) == 0) continue;
    for (const auto& op : chunk) {
      const int err = transaction(table, std::span(&op, 1));
      if (err == 0) continue;
      if (failed.count++ == 0) {
        failed.first = element_op_text(table, op) + ": " + std::strerror(err);
      }
    }
  }
  if (failed.count == 0) return {};
  return failed;
}

}  // namespace quicstep::client::kernel
