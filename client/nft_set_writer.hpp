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

#include "client/nft_netlink.hpp"
#include "client/nft_rules.hpp"

namespace quicstep::client {

class NftSetWriter {
 public:
  // Opens the netlink socket in the caller's network namespace. Empty on success, else why.
  std::string open() { return netlink_.open(); }
  bool is_open() const { return netlink_.is_open(); }

  // Applies `ops` to `table` (family inet) in one transaction. A transaction fails as a
  // whole (a delete of an absent element, a full set), so on failure each op is retried
  // alone. Returns the number of ops that failed; `first_error` (if given) gets the first
  // failure's op text and reason.
  int apply(std::string_view table, std::span<const SetElementOp> ops,
            std::string* first_error = nullptr);

 private:
  // One transaction; 0 when the kernel reported no error, else the first errno.
  int transaction(std::string_view table, std::span<const SetElementOp> ops);

  NftNetlink netlink_;
};

}  // namespace quicstep::client
