#include "client/kernel/nflog_observer.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

extern "C" {
#include <libnetfilter_log/libnetfilter_log.h>
}

namespace quicstep::client::kernel {
namespace {

constexpr std::size_t kRxSize = 256 * 1024;  // a burst of whole packets and their attributes

}  // namespace

NflogObserver::~NflogObserver() { close(); }

void NflogObserver::close() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
  nl_ = nullptr;
}

int NflogObserver::fd() const { return nl_ ? mnl_socket_get_fd(nl_) : -1; }

common::Outcome NflogObserver::open(std::uint16_t group, int rcvbuf) {
  nl_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (nl_ == nullptr) return common::Failure(std::string("nflog socket: ") + std::strerror(errno));
  if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
    return common::Failure(std::string("nflog bind: ") + std::strerror(errno));
  }
  if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0) {
    setsockopt(fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  rx_.resize(kRxSize);
  if (auto why = configure(group); !why) return why;
  const int flags = fcntl(fd(), F_GETFL);
  if (flags < 0 || fcntl(fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return common::Failure(std::string("fcntl O_NONBLOCK: ") + std::strerror(errno));
  }
  return {};
}

common::Outcome NflogObserver::configure(std::uint16_t group) {
  // Two messages, each acknowledged: bind the group, then copy mode and queue threshold.
  char buf[MNL_SOCKET_BUFFER_SIZE];
  for (std::uint32_t step = 0; step < 2; ++step) {
    nlmsghdr* nlh = nflog_nlmsg_put_header(buf, NFULNL_MSG_CONFIG, AF_UNSPEC, group);
    nlh->nlmsg_flags |= NLM_F_ACK;
    nlh->nlmsg_seq = step + 1;
    if (step == 0) {
      nflog_attr_put_cfg_cmd(nlh, NFULNL_CFG_CMD_BIND);
    } else {
      nflog_attr_put_cfg_mode(nlh, NFULNL_COPY_PACKET, 0xffff);
      mnl_attr_put_u32(nlh, NFULA_CFG_QTHRESH, htonl(1));
    }
    if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) {
      return common::Failure(std::string("nflog config send: ") + std::strerror(errno));
    }
    const ssize_t n = mnl_socket_recvfrom(nl_, rx_.data(), rx_.size());
    if (n < 0) return common::Failure(std::string("nflog config ack: ") + std::strerror(errno));
    if (mnl_cb_run(rx_.data(), static_cast<std::size_t>(n), step + 1,
                   mnl_socket_get_portid(nl_), nullptr, nullptr) < 0) {
      return common::Failure("nflog group " + std::to_string(group) + ": " + std::strerror(errno));
    }
  }
  return {};
}

void NflogObserver::drain(const Observe& observe, int max_datagrams) {
  if (nl_ == nullptr) return;
  for (int d = 0; d < max_datagrams; ++d) {
    const ssize_t n = mnl_socket_recvfrom(nl_, rx_.data(), rx_.size());
    if (n < 0) {
      if (errno == ENOBUFS) {
        ++stats_.enobufs;
        continue;
      }
      return;  // EAGAIN: drained
    }
    int left = static_cast<int>(n);
    for (const nlmsghdr* h = reinterpret_cast<const nlmsghdr*>(rx_.data()); mnl_nlmsg_ok(h, left);
         h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)) continue;
      nlattr* attr[NFULA_MAX + 1] = {};
      if (nflog_nlmsg_parse(h, attr) < 0 || attr[NFULA_PAYLOAD] == nullptr) {
        ++stats_.bad_messages;
        continue;
      }
      ObservedPacket p;
      p.payload = common::Bytes(
          static_cast<const std::uint8_t*>(mnl_attr_get_payload(attr[NFULA_PAYLOAD])),
          mnl_attr_get_payload_len(attr[NFULA_PAYLOAD]));
      if (attr[NFULA_IFINDEX_INDEV]) p.indev = ntohl(mnl_attr_get_u32(attr[NFULA_IFINDEX_INDEV]));
      if (attr[NFULA_IFINDEX_OUTDEV]) {
        p.outdev = ntohl(mnl_attr_get_u32(attr[NFULA_IFINDEX_OUTDEV]));
      }
      if (attr[NFULA_PREFIX] && mnl_attr_validate(attr[NFULA_PREFIX], MNL_TYPE_NUL_STRING) == 0) {
        p.prefix = mnl_attr_get_str(attr[NFULA_PREFIX]);
      }
      ++stats_.packets;
      stats_.bytes += p.payload.size();
      observe(p);
    }
  }
}

}  // namespace quicstep::client::kernel
