#include "net/nfqueue_frontend.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

extern "C" {
#include <libnetfilter_queue/libnetfilter_queue.h>
}

namespace quicstep::net {
namespace {

constexpr std::size_t kRxSize = 0xffff + 4096;  // one whole packet plus its attributes
constexpr std::size_t kTxSize = 64 * 1024;

struct CallbackCtx {
  NfqueueFrontend* self;
  const NfqueueFrontend::Decide* decide;
  common::Timestamp now;
};

}  // namespace

NfqueueFrontend::~NfqueueFrontend() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
}

int NfqueueFrontend::fd() const { return nl_ ? mnl_socket_get_fd(nl_) : -1; }

common::Outcome NfqueueFrontend::open(const NfqueueOptions& o) {
  nl_ = mnl_socket_open(NETLINK_NETFILTER);
  if (nl_ == nullptr) return common::Failure(std::string("mnl_socket_open: ") + strerror(errno));
  if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
    return common::Failure(std::string("mnl_socket_bind: ") + strerror(errno));
  }
  portid_ = mnl_socket_get_portid(nl_);
  queue_ = o.queue;
  deferral_ = VerdictDeferral(o.max_deferred);
  // A large receive buffer makes ENOBUFS rare under bursts; FORCE needs CAP_NET_ADMIN.
  if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUFFORCE, &o.rcvbuf, sizeof o.rcvbuf) < 0) {
    setsockopt(fd(), SOL_SOCKET, SO_RCVBUF, &o.rcvbuf, sizeof o.rcvbuf);
  }
  rx_.resize(kRxSize);
  tx_.resize(kTxSize);
  if (auto configured = configure(o); !configured) return configured;
  int flags = fcntl(fd(), F_GETFL);
  if (flags < 0 || fcntl(fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return common::Failure(std::string("fcntl O_NONBLOCK: ") + strerror(errno));
  }
  return {};
}

common::Outcome NfqueueFrontend::configure(const NfqueueOptions& o) {
  // Two messages, each acknowledged: bind, then parameters and flags.
  for (int step = 0; step < 2; ++step) {
    nlmsghdr* nlh = nfq_nlmsg_put(tx_.data(), NFQNL_MSG_CONFIG, o.queue);
    nlh->nlmsg_flags |= NLM_F_ACK;
    const std::uint32_t seq = static_cast<std::uint32_t>(step + 1);
    nlh->nlmsg_seq = seq;
    if (step == 0) {
      nfq_nlmsg_cfg_put_cmd(nlh, AF_UNSPEC, NFQNL_CFG_CMD_BIND);
    } else {
      nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, 0xffff);
      const std::uint32_t flags = NFQA_CFG_F_FAIL_OPEN | (o.gso ? NFQA_CFG_F_GSO : 0);
      mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
      mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO));
      mnl_attr_put_u32(nlh, NFQA_CFG_QUEUE_MAXLEN, htonl(o.max_len));
    }
    if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) {
      return common::Failure(std::string("nfqueue config send: ") + strerror(errno));
    }
    ssize_t n = mnl_socket_recvfrom(nl_, rx_.data(), rx_.size());
    if (n < 0 || mnl_cb_run(rx_.data(), static_cast<std::size_t>(n), seq, portid_, nullptr,
                            nullptr) < 0) {
      return common::Failure("nfqueue " + std::to_string(o.queue) +
                             (step == 0 ? " bind: " : " config: ") + strerror(errno));
    }
  }
  return {};
}

void NfqueueFrontend::handle_message(const void* msg, const Decide& decide,
                                     common::Timestamp now) {
  const auto* nlh = static_cast<const nlmsghdr*>(msg);
  nlattr* attr[NFQA_MAX + 1] = {};
  if (nfq_nlmsg_parse(nlh, attr) < 0 || attr[NFQA_PACKET_HDR] == nullptr) {
    ++stats_.bad_messages;
    return;
  }
  const auto* ph =
      static_cast<const nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(attr[NFQA_PACKET_HDR]));
  QueuedPacket p;
  p.id = ntohl(ph->packet_id);
  if (attr[NFQA_PAYLOAD] != nullptr) {
    p.payload = common::Bytes(static_cast<const std::uint8_t*>(mnl_attr_get_payload(attr[NFQA_PAYLOAD])),
                              mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]));
  }
  if (attr[NFQA_MARK] != nullptr) p.mark = ntohl(mnl_attr_get_u32(attr[NFQA_MARK]));
  if (attr[NFQA_IFINDEX_INDEV] != nullptr) {
    p.indev = ntohl(mnl_attr_get_u32(attr[NFQA_IFINDEX_INDEV]));
  }
  if (attr[NFQA_CAP_LEN] != nullptr) {
    p.truncated = ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN])) > p.payload.size();
  }
  ++stats_.packets;
  stats_.bytes += p.payload.size();
  if (lost_) {
    // Messages were lost: release every id before this one unchanged (their pre-set mark
    // is the channel) before deciding anything else.
    // That batch also releases the deferred packets (all older): unchanged, the channel.
    lost_ = false;
    stats_.defer_abandoned += deferral_.abandon();
    if (p.id > 0) pending_.push_back({p.id - 1, std::nullopt});
  }
  // A truncated copy cannot be classified safely: unchanged (the channel).
  if (p.truncated) {
    pending_.push_back({p.id, std::nullopt});
    return;
  }
  const PacketVerdict v = decide(p);
  if (v.not_before > now) {
    if (deferral_.defer(p.id, v.mark, v.not_before)) {
      ++stats_.deferred;
      return;
    }
    ++stats_.defer_refused;
  }
  pending_.push_back({p.id, v.mark});
}

void NfqueueFrontend::release_due(common::Timestamp now) {
  deferral_.release_due(now, &pending_);
  flush();
}

void NfqueueFrontend::drain(const Decide& decide, common::Timestamp now, int max_datagrams) {
  // Due deferred packets first: a later packet of their flow is decided with no wait.
  deferral_.release_due(now, &pending_);
  CallbackCtx ctx{this, &decide, now};
  for (int i = 0; i < max_datagrams; ++i) {
    ssize_t n = recv(fd(), rx_.data(), rx_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {  // do not fail on ENOBUFS: messages lost, packets not
        ++stats_.enobufs;
        lost_ = true;
        continue;
      }
      break;  // EAGAIN: drained
    }
    auto cb = [](const nlmsghdr* nlh, void* data) -> int {
      auto* c = static_cast<CallbackCtx*>(data);
      c->self->handle_message(nlh, *c->decide, c->now);
      return MNL_CB_OK;
    };
    if (mnl_cb_run(rx_.data(), static_cast<std::size_t>(n), 0, portid_, cb, &ctx) < 0) {
      ++stats_.verdict_errors;  // an error ack for an earlier verdict, or a bad message
    }
  }
  flush();
}

void NfqueueFrontend::flush() {
  if (pending_.empty()) return;
  mnl_nlmsg_batch* batch = mnl_nlmsg_batch_start(tx_.data(), tx_.size() - 256);
  auto send = [&] {
    if (mnl_nlmsg_batch_size(batch) == 0) return;
    if (mnl_socket_sendto(nl_, mnl_nlmsg_batch_head(batch), mnl_nlmsg_batch_size(batch)) < 0) {
      ++stats_.verdict_errors;
    }
    mnl_nlmsg_batch_reset(batch);
  };
  plan_verdicts(pending_, &plan_, deferral_.oldest_id());
  for (const auto& v : plan_) {
    auto* nlh = nfq_nlmsg_put(static_cast<char*>(mnl_nlmsg_batch_current(batch)),
                              v.batch ? NFQNL_MSG_VERDICT_BATCH : NFQNL_MSG_VERDICT, queue_);
    nfq_nlmsg_verdict_put(nlh, static_cast<int>(v.id), NF_ACCEPT);
    if (v.mark) nfq_nlmsg_verdict_put_mark(nlh, *v.mark);
    if (v.batch) ++stats_.batches;
    if (!mnl_nlmsg_batch_next(batch)) send();
  }
  send();
  mnl_nlmsg_batch_stop(batch);
  pending_.clear();
}

}  // namespace quicstep::net
