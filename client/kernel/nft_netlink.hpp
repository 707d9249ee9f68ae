// NftNetlink: nf_tables transactions over an nfnetlink socket (libmnl), for messages that
// libnftnl builds: batch begin, the caller's messages, batch end, then one acknowledgement
// per message (each carries NLM_F_ACK). The kernel runs the transaction inside sendmsg, so a
// transaction returns after microseconds, without starting a program. Used for flow-set
// elements (nft_set_writer.hpp) and for the rules `nft` cannot write (nft_queue_rules.hpp,
// channel_icmp_rules.hpp). Control plane; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/error.hpp"

struct mnl_socket;
struct nftnl_rule;

namespace quicstep::client::kernel {

// A libnftnl rule that frees itself, with the expressions added to it.
struct NftnlRuleDeleter {
  void operator()(nftnl_rule* rule) const;
};
using NftnlRulePtr = std::unique_ptr<nftnl_rule, NftnlRuleDeleter>;

class NftNetlink {
 public:
  NftNetlink() = default;
  NftNetlink(const NftNetlink&) = delete;
  NftNetlink& operator=(const NftNetlink&) = delete;
  ~NftNetlink();

  // Opens the socket in the caller's network namespace. Failures: the socket's.
  common::Outcome open();
  bool is_open() const { return socket_ != nullptr; }

  // Writes message `index` (of `count`) at `buf` with sequence number `seq` (the header
  // asking for NLM_F_ACK); returns its NLMSG_ALIGNed length, at most `bytes_per_message`.
  using BuildMessage = std::function<std::size_t(char* buf, std::uint32_t seq, std::size_t index)>;

  // One transaction of `count` messages; 0 when the kernel reported no error, else the first
  // errno. The transaction applies as a whole or not at all.
  int transaction(std::size_t count, std::size_t bytes_per_message, const BuildMessage& build);

 private:
  mnl_socket* socket_ = nullptr;
  std::uint32_t seq_ = 1;
  std::uint32_t port_id_ = 0;
};

}  // namespace quicstep::client::kernel
