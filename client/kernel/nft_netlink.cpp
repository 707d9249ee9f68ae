#include "client/kernel/nft_netlink.hpp"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "net/netlink_socket.hpp"

namespace quicstep::client::kernel {

void NftnlRuleDeleter::operator()(nftnl_rule* rule) const { nftnl_rule_free(rule); }

NftNetlink::~NftNetlink() {
  if (socket_ != nullptr) mnl_socket_close(socket_);
}

common::Outcome NftNetlink::open() {
  if (socket_ != nullptr) return {};
  auto opened = net::open_netlink(NETLINK_NETFILTER, "netlink");
  if (!opened) return opened.error();
  socket_ = *opened;
  port_id_ = mnl_socket_get_portid(socket_);
  return {};
}

int NftNetlink::transaction(std::size_t count, std::size_t bytes_per_message,
                            const BuildMessage& build) {
  if (socket_ == nullptr) return ENOTCONN;
  std::vector<char> buf((count + 2) * bytes_per_message);
  std::size_t len = 0;
  const std::uint32_t first = seq_;
  nlmsghdr* begin = nftnl_batch_begin(buf.data(), seq_++);
  len += NLMSG_ALIGN(begin->nlmsg_len);
  for (std::size_t i = 0; i < count; ++i) len += build(buf.data() + len, seq_++, i);
  nlmsghdr* end = nftnl_batch_end(buf.data() + len, seq_++);
  len += NLMSG_ALIGN(end->nlmsg_len);
  if (mnl_socket_sendto(socket_, buf.data(), len) < 0) return errno != 0 ? errno : EIO;

  // One acknowledgement per message (NLM_F_ACK). The kernel ran the transaction in sendmsg,
  // so they are queued already; the poll only guards against a surprise.
  std::size_t acks = 0;
  int error = 0;
  std::vector<char> rx(MNL_SOCKET_BUFFER_SIZE);
  while (acks < count) {
    pollfd p{mnl_socket_get_fd(socket_), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return error != 0 ? error : ETIMEDOUT;
    const ssize_t n = mnl_socket_recvfrom(socket_, rx.data(), rx.size());
    if (n < 0) return errno != 0 ? errno : EIO;
    int left = static_cast<int>(n);
    for (const nlmsghdr* h = reinterpret_cast<const nlmsghdr*>(rx.data()); mnl_nlmsg_ok(h, left);
         h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_pid != port_id_ || h->nlmsg_seq < first || h->nlmsg_seq >= seq_) continue;
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      ++acks;
      const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
      if (e->error != 0 && error == 0) error = -e->error;
    }
  }
  return error;
}

}  // namespace quicstep::client::kernel
