#include "client/tun/io/engine_loop.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/ipv4.hpp"

namespace quicstep::client::tun {
namespace {

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The server's address of `flow` as a socket address.
socklen_t server_address(const FlowKey& flow, sockaddr_storage* out) {
  std::memset(out, 0, sizeof *out);
  if (flow.server.family == common::IpFamily::v4) {
    auto* a = reinterpret_cast<sockaddr_in*>(out);
    a->sin_family = AF_INET;
    a->sin_port = htons(flow.server_port);
    std::memcpy(&a->sin_addr, flow.server.bytes.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* a = reinterpret_cast<sockaddr_in6*>(out);
  a->sin6_family = AF_INET6;
  a->sin6_port = htons(flow.server_port);
  std::memcpy(&a->sin6_addr, flow.server.bytes.data(), 16);
  return sizeof(sockaddr_in6);
}

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// A packet read with a virtio header that asks for its checksum (CHECKSUM_PARTIAL, which
// a TUN without offloads does not hand out, but a kernel may): completed in place, so that
// what goes on to the channel is a packet any receiver takes. False when the header's
// offsets do not fit the packet.
bool complete_checksum(const VirtioNetHdr& hdr, std::uint8_t* packet, std::size_t n) {
  const std::size_t start = hdr.csum_start, field = start + hdr.csum_offset;
  if (field + 2 > n) return false;
  const std::uint16_t sum = common::internet_checksum(common::Bytes(packet + start, n - start));
  packet[field] = static_cast<std::uint8_t>(sum >> 8);
  packet[field + 1] = static_cast<std::uint8_t>(sum);
  return true;
}

}  // namespace

common::Timestamp EngineLoop::now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return common::Timestamp{std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec};
}

EngineLoop::EngineLoop(const EngineConfig& config, net::UniqueFd tun, net::UniqueFd channel,
                       Protector& protector, std::uint64_t seed)
    : tun_(std::move(tun)),
      channel_(std::move(channel)),
      protector_(protector),
      epoll_(epoll_create1(EPOLL_CLOEXEC)),
      timer_(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)),
      wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      relay_fds_(std::max<std::size_t>(config.relay_capacity, 1), -1),
      lingering_(relay_fds_.size()),
      buffer_(kVirtioNetHdrLength + kMaxPacket),
      segment_buffer_(kVirtioNetHdrLength + kMaxPacket + 40) {
  // The core calls back into this object: construct it last.
  native_.bytes.reserve(65535);
  fast_state_.resize(relay_fds_.size());
  engine_ = std::make_unique<EngineCore>(config, *this, seed);
  set_nonblocking(tun_.get());
  set_nonblocking(channel_.get());
  watch(tun_.get(), kTun);
  watch(channel_.get(), kChannel);
  watch(timer_.get(), kTimer);
  watch(wake_.get(), kWake);
}

EngineLoop::~EngineLoop() {
  for (int& fd : relay_fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  for (Lingering& l : lingering_) {
    if (l.fd >= 0) ::close(l.fd);
    l.fd = -1;
  }
}

bool EngineLoop::watch(int fd, std::uint64_t source) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = source;
  return epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
}

void EngineLoop::stop() {
  stopping_.store(true);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

void EngineLoop::replace_channel(net::UniqueFd channel) {
  if (channel_.valid()) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, channel_.get(), nullptr);
  channel_ = std::move(channel);
  set_nonblocking(channel_.get());
  watch(channel_.get(), kChannel);
}

void EngineLoop::replace_tun(net::UniqueFd tun) {
  batch_.clear();  // written for a device that is gone
  if (tun_.valid()) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, tun_.get(), nullptr);
  tun_ = std::move(tun);
  set_nonblocking(tun_.get());
  watch(tun_.get(), kTun);
}

void EngineLoop::serve_control(net::UniqueFd listener, ControlAnswer answer) {
  control_ = std::move(listener);
  control_answer_ = std::move(answer);
  set_nonblocking(control_.get());
  watch(control_.get(), kControl);
}

bool EngineLoop::watch_descriptor(int fd, std::function<void()> on_readable) {
  if (watched_.size() >= kMaxWatched || !watch(fd, kWatchedBase + watched_.size())) return false;
  watched_.push_back(std::move(on_readable));
  return true;
}

void EngineLoop::network_changed(ChangedFamilies changed) {
  const common::Timestamp now = EngineLoop::now();
  // What the old network delivered and this loop has not read yet reaches the applications
  // before their relays close: closing a socket drops its queue, and those answers may be
  // the last the server sent there. An application that gets them answers (an ACK) from
  // the re-bound relay, which tells the server the new address; without them a client
  // that had acknowledged everything else stays silent and its transfer stalls.
  for (std::size_t id = 0; id < relay_fds_.size(); ++id) {
    if (relay_fds_[id] >= 0) drain_relay(static_cast<RelayId>(id), now);
  }
  keep_closed_relays_ = true;
  engine_->network_changed(now, changed);
  keep_closed_relays_ = false;
}

void EngineLoop::answer_control() {
  net::UniqueFd client(accept4(control_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!client.valid()) return;
  std::string request;
  char buf[256];
  while (request.find('\n') == std::string::npos && request.size() < 1024) {
    pollfd p{client.get(), POLLIN, 0};
    if (poll(&p, 1, 200) != 1) return;
    const ssize_t n = ::recv(client.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    request.append(buf, static_cast<std::size_t>(n));
  }
  request = request.substr(0, request.find('\n'));
  const std::string reply = control_answer_ ? control_answer_(request) : std::string();
  for (std::size_t sent = 0; sent < reply.size();) {
    pollfd p{client.get(), POLLOUT, 0};
    if (poll(&p, 1, 200) != 1) return;
    const ssize_t n = ::send(client.get(), reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

std::string EngineLoop::run() {
  if (!epoll_.valid() || !timer_.valid() || !wake_.valid()) return "epoll, timerfd or eventfd";
  std::array<epoll_event, 32> events{};
  while (!stopping_.load()) {
    arm_timer();
    // Lingering sockets are looked at once a second at least, to close them in time.
    const int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                             lingering_ids_.empty() ? -1 : 1000);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_text("epoll_wait");
    }
    ++counters_.wakeups;
    const common::Timestamp now = EngineLoop::now();
    for (int i = 0; i < n; ++i) {
      const std::uint64_t source = events[static_cast<std::size_t>(i)].data.u64;
      std::string ended;
      if (source == kTun) {
        ended = drain_tun(now);
      } else if (source == kChannel) {
        ended = drain_channel(now);
      } else if (source == kTimer) {
        ++counters_.timer_wakeups;
        std::uint64_t expirations = 0;
        [[maybe_unused]] const ssize_t r = ::read(timer_.get(), &expirations, sizeof expirations);
        armed_ = common::Timestamp::never();
      } else if (source == kWake) {
        std::uint64_t value = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_.get(), &value, sizeof value);
      } else if (source == kControl) {
        answer_control();
      } else if (source & kLingerFlag) {
        const auto id = static_cast<RelayId>(source & ~kLingerFlag);
        if (id < lingering_.size() && lingering_[id].fd >= 0) {
          drain_relay_socket(lingering_[id].fd, id, now);
        }
      } else if (source >= kWatchedBase && source < kRelayBase) {
        watched_[source - kWatchedBase]();
      } else if (source >= kRelayBase) {
        drain_relay(static_cast<RelayId>(source - kRelayBase), now);
      }
      if (!ended.empty()) return ended;
    }
    const common::Timestamp after = EngineLoop::now();
    if (engine_->next_expiry() <= after) engine_->on_expiry(after);
    if (!lingering_ids_.empty()) expire_lingering(after);
  }
  return "stopped";
}

void EngineLoop::arm_timer() {
  const common::Timestamp next = engine_->next_expiry();
  if (next == armed_) return;
  armed_ = next;
  ++counters_.timer_arms;
  itimerspec spec{};
  if (next != common::Timestamp::never()) {
    // An absolute time on CLOCK_MONOTONIC, the clock the engine's timestamps come from; a
    // time already past fires at once (never zero: that would disarm).
    const std::int64_t ns = std::max<std::int64_t>(next.ns, 1);
    spec.it_value.tv_sec = ns / 1'000'000'000;
    spec.it_value.tv_nsec = ns % 1'000'000'000;
  }
  timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
}

std::string EngineLoop::drain_tun(common::Timestamp now) {
  batching_native_ = format_.relay_gso;
  const std::string ended = drain_tun_packets(now);
  batching_native_ = false;
  flush_native();
  return ended;
}

std::string EngineLoop::drain_tun_packets(common::Timestamp now) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    const ssize_t n = ::read(tun_.get(), buffer_.data(), buffer_.size());
    if (n > 0 && format_.vnet_header) {
      VirtioNetHdr hdr;
      if (static_cast<std::size_t>(n) <= sizeof hdr) continue;
      std::memcpy(&hdr, buffer_.data(), sizeof hdr);
      std::uint8_t* packet = buffer_.data() + sizeof hdr;
      const std::size_t length = static_cast<std::size_t>(n) - sizeof hdr;
      // No offload is enabled for reads (TUNSETOFFLOAD is left at 0): a GSO packet here
      // would be a kernel's mistake, and is dropped rather than sent on half-understood.
      if (hdr.gso_type != kVirtioGsoNone ||
          ((hdr.flags & kVirtioNeedsCsum) && !complete_checksum(hdr, packet, length))) {
        ++counters_.tun_read_dropped;
        continue;
      }
      engine_->from_tun(common::Bytes(packet, length), now);
      continue;
    }
    if (n > 0) {
      engine_->from_tun(common::Bytes(buffer_.data(), static_cast<std::size_t>(n)), now);
      continue;
    }
    if (n == 0) return "the TUN closed";
    if (would_block(errno) || errno == EINTR) return {};
    if (errno == EBADFD) return kTunGone;
    return errno_text("read tun");
  }
  return {};
}

std::string EngineLoop::drain_channel(common::Timestamp now) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    const ssize_t n = ::recv(channel_.get(), buffer_.data(), buffer_.size(), 0);
    if (n > 0) {
      engine_->from_channel(common::Bytes(buffer_.data(), static_cast<std::size_t>(n)), now);
      continue;
    }
    // The helper never sends an empty message: 0 is its end closing (it died).
    if (n == 0) return kChannelClosed;
    if (would_block(errno) || errno == EINTR) return {};
    return errno_text("recv channel");
  }
  return {};
}

void EngineLoop::drain_relay(RelayId id, common::Timestamp now) {
  if (id >= relay_fds_.size() || relay_fds_[id] < 0) return;  // closed by an earlier event
  drain_relay_socket(relay_fds_[id], id, now);
}

void EngineLoop::drain_relay_socket(int fd, RelayId id, common::Timestamp now) {
  const bool lingering = fd == lingering_[id].fd;
  // Replies written during this drain are joined into GSO super-packets where they can be.
  batching_ = format_.udp_gso;
  for (std::size_t i = 0; i < kBatch; ++i) {
    // Closed by an earlier datagram of this drain (the flow ended, or it moved).
    if (lingering ? lingering_[id].fd != fd : relay_fds_[id] != fd) break;
    iovec iov{buffer_.data(), kMaxPacket};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, 0);
    if (n < 0) {
      // ECONNREFUSED and other errors queued on a connected UDP socket are read once and
      // dropped: the flow's watchdog judges by what comes back, not by ICMP.
      if (would_block(errno) || errno == EINTR) break;
      continue;
    }
    // With UDP_GRO, one read may hold several datagrams of one size (the last shorter).
    std::size_t segment = static_cast<std::size_t>(n);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
        int size = 0;
        std::memcpy(&size, CMSG_DATA(c), sizeof size);
        if (size > 0) segment = static_cast<std::size_t>(size);
      }
    }
    ++counters_.relay_reads;
    if (segment < static_cast<std::size_t>(n)) ++counters_.relay_gro_reads;
    if (lingering) {
      counters_.linger_datagrams += (static_cast<std::size_t>(n) + segment - 1) / segment;
    } else {
      if (lingering_[id].fd >= 0) end_lingering(id);  // the server answers the new address
      if (fast_ != nullptr && !fast_state_[id].answered) {
        fast_state_[id].answered = true;
        update_fast_path(id);
      }
    }
    std::size_t offset = 0;
    do {
      const std::size_t len = std::min(segment, static_cast<std::size_t>(n) - offset);
      engine_->from_relay(id, common::Bytes(buffer_.data() + offset, len), now);
      offset += len;
    } while (offset < static_cast<std::size_t>(n));
  }
  batching_ = false;
  flush_tun();
}

bool EngineLoop::open_relay(RelayId id, const FlowKey& flow) {
  if (id >= relay_fds_.size()) return false;
  // A new flow on this id: a lingering socket of the id's last flow (whose re-opening failed
  // at a change) must not hand it that flow's datagrams.
  if (!keep_closed_relays_) end_lingering(id);
  sockaddr_storage server{};
  const socklen_t len = server_address(flow, &server);
  net::UniqueFd fd(::socket(server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    ++counters_.relay_socket_failed;
    counters_.last_error = errno_text("socket");
    return false;
  }
  // Protected before anything leaves it: connect() picks the route (and source) already.
  if (std::string error = protector_.protect(fd.get()); !error.empty()) {
    ++counters_.protect_failed;
    counters_.last_error = std::move(error);
    return false;
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&server), len) != 0) {
    ++counters_.relay_socket_failed;
    counters_.last_error = errno_text("connect");
    return false;
  }
  if (format_.relay_gro) {
    const int on = 1;  // best effort: a kernel without it reads one datagram at a time
    (void)setsockopt(fd.get(), IPPROTO_UDP, UDP_GRO, &on, sizeof on);
  }
  if (!watch(fd.get(), kRelayBase + id)) {
    ++counters_.relay_socket_failed;
    counters_.last_error = errno_text("epoll_ctl");
    return false;
  }
  relay_fds_[id] = fd.release();
  FastState& f = fast_state_[id];
  // Re-opened for the same flow (a network change): its confirmation stands; its server
  // has yet to answer the new socket.
  if (!(f.flow == flow)) f.confirmed = false;
  f.flow = flow;
  f.answered = false;
  return true;
}

void EngineLoop::relay_confirmed(RelayId id, bool confirmed) {
  if (fast_ == nullptr || id >= fast_state_.size()) return;
  fast_state_[id].confirmed = confirmed;
  update_fast_path(id);
}

void EngineLoop::update_fast_path(RelayId id) {
  FastState& f = fast_state_[id];
  const bool wanted = f.confirmed && f.answered && relay_fds_[id] >= 0;
  if (wanted == f.installed) return;
  if (wanted) {
    // What the engine holds of the flow leaves before the kernel sends its next datagrams.
    if (native_.count > 0 && native_.id == id) flush_native();
    f.installed = fast_->install(f.flow, relay_fds_[id]);
  } else {
    fast_->remove(f.flow);
    f.installed = false;
  }
}

void EngineLoop::close_relay(RelayId id) {
  if (id >= relay_fds_.size() || relay_fds_[id] < 0) return;
  if (native_.count > 0 && native_.id == id) flush_native();  // what it was given leaves first
  if (fast_state_[id].installed) {
    fast_->remove(fast_state_[id].flow);
    fast_state_[id].installed = false;
  }
  // Closed for good (not re-opened at a network change): a later flow on this id, even the
  // same four-tuple again, waits for a confirmation of its own.
  if (!keep_closed_relays_) fast_state_[id].confirmed = false;
  fast_state_[id].answered = false;
  end_lingering(id);  // one from an earlier change: no longer the server's last address
  const int fd = std::exchange(relay_fds_[id], -1);
  if (keep_closed_relays_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kLingerFlag | id;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) == 0) {
      lingering_[id] = {fd, EngineLoop::now() + kLinger};
      lingering_ids_.push_back(id);  // allocates: at a network change, not per packet
      ++counters_.relays_lingered;
      return;
    }
  }
  ::close(fd);  // leaves the epoll set with it
}

void EngineLoop::end_lingering(RelayId id) {
  if (lingering_[id].fd < 0) return;
  ::close(lingering_[id].fd);
  lingering_[id].fd = -1;
  std::erase(lingering_ids_, id);
}

void EngineLoop::expire_lingering(common::Timestamp now) {
  for (std::size_t i = lingering_ids_.size(); i-- > 0;) {
    const RelayId id = lingering_ids_[i];
    if (lingering_[id].until <= now) end_lingering(id);
  }
}

void EngineLoop::send_native(RelayId id, common::Bytes udp_payload) {
  if (!batching_native_ || udp_payload.empty()) {
    flush_native();
    send_native_now(id, udp_payload);
    return;
  }
  // The kernel's limits on one UDP_SEGMENT send: 64 segments (UDP_MAX_SEGMENTS on older
  // kernels) and one IP datagram's length.
  constexpr std::size_t kMaxSegments = 64, kMaxBytes = 65535 - 48;
  NativeBatch& b = native_;
  const bool joins = b.count > 0 && b.id == id && !b.closed && udp_payload.size() <= b.segment &&
                     b.count < kMaxSegments && b.bytes.size() + udp_payload.size() <= kMaxBytes;
  if (!joins) {
    flush_native();
    b.id = id;
    b.segment = udp_payload.size();
  }
  b.bytes.insert(b.bytes.end(), udp_payload.begin(), udp_payload.end());
  ++b.count;
  b.closed = udp_payload.size() < b.segment;
}

void EngineLoop::send_native_now(RelayId id, common::Bytes udp_payload) {
  if (id >= relay_fds_.size() || relay_fds_[id] < 0 ||
      ::send(relay_fds_[id], udp_payload.data(), udp_payload.size(), MSG_DONTWAIT) < 0) {
    ++counters_.native_send_failed;
  }
}

void EngineLoop::flush_native() {
  NativeBatch& b = native_;
  if (b.count == 0) return;
  const common::Bytes all(b.bytes.data(), b.bytes.size());
  if (b.count == 1) {
    send_native_now(b.id, all);
  } else if (b.id >= relay_fds_.size() || relay_fds_[b.id] < 0) {
    counters_.native_send_failed += b.count;
  } else {
    iovec iov{b.bytes.data(), b.bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(std::uint16_t))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = IPPROTO_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
    const auto segment = static_cast<std::uint16_t>(b.segment);
    std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
    if (::sendmsg(relay_fds_[b.id], &msg, MSG_DONTWAIT) >= 0) {
      ++counters_.relay_gso_sends;
      counters_.relay_gso_segments += b.count;
    } else if (errno == EINVAL || errno == EIO || errno == EOPNOTSUPP) {
      // No UDP GSO on this kernel or route (EIO: a device without checksum offload): this
      // run leaves datagram by datagram, and no other is gathered.
      ++counters_.relay_gso_refused;
      counters_.last_error = errno_text("sendmsg (UDP_SEGMENT)");
      format_.relay_gso = batching_native_ = false;
      for (std::size_t off = 0; off < b.bytes.size(); off += b.segment) {
        send_native_now(b.id, all.subspan(off, std::min(b.segment, b.bytes.size() - off)));
      }
    } else {
      counters_.native_send_failed += b.count;
    }
  }
  b.count = 0;
  b.closed = false;
  b.bytes.clear();
}

void EngineLoop::send_channel(common::Bytes ip_packet) {
  if (::send(channel_.get(), ip_packet.data(), ip_packet.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
    ++counters_.channel_send_dropped;
  }
}

void EngineLoop::write_tun(common::Bytes ip_packet) {
  if (batching_) {
    if (batch_.add(ip_packet)) return;
    flush_tun();
    if (batch_.add(ip_packet)) return;
  } else {
    flush_tun();  // nothing overtakes what a batch holds
  }
  write_tun_now(ip_packet);
}

void EngineLoop::write_tun_now(common::Bytes ip_packet) {
  ssize_t n;
  if (format_.vnet_header) {
    static const VirtioNetHdr kPlain;  // a complete packet: nothing for the kernel to do
    iovec iov[2] = {{const_cast<VirtioNetHdr*>(&kPlain), sizeof kPlain},
                    {const_cast<std::uint8_t*>(ip_packet.data()), ip_packet.size()}};
    n = ::writev(tun_.get(), iov, 2);
  } else {
    n = ::write(tun_.get(), ip_packet.data(), ip_packet.size());
  }
  if (n < 0) ++counters_.tun_write_dropped;
}

void EngineLoop::flush_tun() {
  if (batch_.empty()) return;
  const std::size_t segments = batch_.segments();
  const std::span<const std::uint8_t> form = batch_.write_form();
  if (::write(tun_.get(), form.data(), form.size()) >= 0) {
    if (segments > 1) {
      ++counters_.tun_gso_writes;
      counters_.tun_gso_segments += segments;
    }
  } else if (segments > 1 && errno == EINVAL) {
    // A kernel that does not take VIRTIO_NET_HDR_GSO_UDP_L4 after all: this batch is
    // written packet by packet, and no other is made.
    ++counters_.tun_gso_refused;
    counters_.last_error = errno_text("write tun (UDP GSO)");
    format_.udp_gso = batching_ = false;
    engine_->set_reply_checksum(ReplyChecksum::complete);  // later replies: plain writes
    for (std::size_t i = 0; i < segments; ++i) {
      const std::size_t len = batch_.segment(i, segment_buffer_);
      if (len == 0 || ::write(tun_.get(), segment_buffer_.data(), len) < 0) {
        ++counters_.tun_write_dropped;
      }
    }
  } else {
    counters_.tun_write_dropped += segments;
  }
  batch_.clear();
}

}  // namespace quicstep::client::tun
