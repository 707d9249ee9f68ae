#include "client/nft_set_writer.hpp"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace quicstep::client {
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
  const std::vector<std::uint8_t> key = set_element_key(op.flow);
  nftnl_set_elem_set(elem, NFTNL_SET_ELEM_KEY, key.data(), static_cast<std::uint32_t>(key.size()));
  if (op.add) {
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

NftSetWriter::~NftSetWriter() {
  if (socket_ != nullptr) mnl_socket_close(socket_);
}

std::string NftSetWriter::open() {
  if (socket_ != nullptr) return {};
  socket_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (socket_ == nullptr) return std::string("netlink socket: ") + std::strerror(errno);
  if (mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) {
    std::string why = std::string("netlink bind: ") + std::strerror(errno);
    mnl_socket_close(socket_);
    socket_ = nullptr;
    return why;
  }
  port_id_ = mnl_socket_get_portid(socket_);
  return {};
}

int NftSetWriter::transaction(std::string_view table, std::span<const SetElementOp> ops) {
  std::vector<char> buf((ops.size() + 2) * kBytesPerOp);
  std::size_t len = 0;
  const std::uint32_t first = seq_;
  nlmsghdr* begin = nftnl_batch_begin(buf.data(), seq_++);
  len += NLMSG_ALIGN(begin->nlmsg_len);
  for (const auto& op : ops) len += build_op(buf.data() + len, table, op, seq_++);
  nlmsghdr* end = nftnl_batch_end(buf.data() + len, seq_++);
  len += NLMSG_ALIGN(end->nlmsg_len);
  if (mnl_socket_sendto(socket_, buf.data(), len) < 0) return errno != 0 ? errno : EIO;

  // One acknowledgement per element message (NLM_F_ACK). The kernel ran the transaction in
  // sendmsg, so they are queued already; the poll only guards against a surprise.
  std::size_t acks = 0;
  int error = 0;
  std::vector<char> rx(MNL_SOCKET_BUFFER_SIZE);
  while (acks < ops.size()) {
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

int NftSetWriter::apply(std::string_view table, std::span<const SetElementOp> ops,
                        std::string* first_error) {
  if (socket_ == nullptr) {
    if (first_error != nullptr) *first_error = "netlink socket not open";
    return static_cast<int>(ops.size());
  }
  int failed = 0;
  for (std::size_t at = 0; at < ops.size(); at += kOpsPerTransaction) {
    const auto chunk = ops.subspan(at, std::min(kOpsPerTransaction, ops.size() - at));
    if (transaction(table, chunk) == 0) continue;
    for (const auto& op : chunk) {
      const int err = transaction(table, std::span(&op, 1));
      if (err == 0) continue;
      if (failed++ == 0 && first_error != nullptr) {
        *first_error = element_op_text(table, op) + ": " + std::strerror(err);
      }
    }
  }
  return failed;
}

}  // namespace quicstep::client
