// nft_queue_rules: the rules that hand a chain's packets to one of the daemon's queues, written
// into the installed table over netlink (libnftnl). This kernel has no nft `queue` expression
// (CONFIG_NFT_QUEUE unset), so `nft` cannot write them; the xt NFQUEUE target (through
// nft_compat) sits in an inet chain as well as in iptables-nft's. A queue rule in a chain of
// our own table costs a packet nothing until its chain is reached, where a rule in another
// base chain (iptables raw) costs every packet of the hook that base chain's traversal.
// nft lists the rule as `queue num N bypass` (translated from xt), which this kernel would not
// accept back: the daemon never feeds a listing back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/kernel/nft_netlink.hpp"
#include "common/error.hpp"

namespace quicstep::client::kernel {

// Appends to each of `chains` (table inet `table`) one rule: xt NFQUEUE to `queue`, with
// bypass (no listener: the packet goes on as accepted), in one transaction. Failures: the
// socket's, the kernel refusing the transaction.
common::Outcome append_queue_rules(NftNetlink& netlink, std::string_view table,
                                   const std::vector<std::string>& chains, std::uint16_t queue);

}  // namespace quicstep::client::kernel
