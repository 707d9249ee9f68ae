// NftSetWriter: applies flow-set changes (SetElementOp) to the installed table over an
// nfnetlink socket (libnftnl messages, nft_netlink.hpp) in one nf_tables transaction, without
// starting a program. The kernel runs the transaction inside sendmsg, so apply() returns
// after microseconds, where `nft -f` (fork, exec, cache fetch) took milliseconds — tens of
// them while the CPUs are busy with a transfer, and the flow's packets waited in the queue
// meanwhile. Control plane; not thread-safe; one per daemon.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "client/kernel/nft_netlink.hpp"
#include "client/kernel/nft_rules.hpp"
#include "common/error.hpp"

namespace quicstep::client::kernel {

class NftSetWriter {
 public:
  // Opens the netlink socket in the caller's network namespace. Failures: the socket's.
  common::Outcome open() { return netlink_.open(); }
  bool is_open() const { return netlink_.is_open(); }

  // Applies `ops` to `table` (family inet) in one transaction. A transaction fails as a
  // whole (a delete of an absent element, a full set), so on failure each op is retried
  // alone. The failure counts the ops that failed and names the first (its op text and the
  // kernel's reason), or says that the socket is not open (then every op failed).
  struct Failures {
    int count = 0;
    std::string first;
  };
  common::Result<void, Failures> apply(std::string_view table, std::span<const SetElementOp> ops);

 private:
  // One transaction; 0 when the kernel reported no error, else the first errno.
  int transaction(std::string_view table, std::span<const SetElementOp> ops);

  NftNetlink netlink_;
};

}  // namespace quicstep::client::kernel
