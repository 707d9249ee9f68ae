#include "server_testbed/load/load_connection.hpp"

#include <nghttp3/nghttp3.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>

#include "net/socket_endpoint.hpp"
#include "quic/path.hpp"
#include "quic/time.hpp"

namespace quicstep::server_testbed {

namespace {

// A client socket bound to addr (port 0); *bound gets the address with its port.
net::UdpSocket::Opened open_bound(const sockaddr_storage& addr, sockaddr_storage* bound) {
  auto opened = net::UdpSocket::open_client(addr, net::sockaddr_len(addr));
  if (!opened) return opened;
  const int one = 1;  // kernel receive timestamps: handovers do not include our own delays
  setsockopt(opened->fd(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
  socklen_t len = sizeof(*bound);
  getsockname(opened->fd(), reinterpret_cast<sockaddr*>(bound), &len);
  return opened;
}

double ms(ngtcp2_tstamp d) { return static_cast<double>(d) / NGTCP2_MILLISECONDS; }

// One datagram with the kernel's receive time (SO_TIMESTAMPNS, CLOCK_REALTIME) converted to
// CLOCK_MONOTONIC; *rx_at = now when the kernel gave no timestamp. -1: nothing to read.
long recv_stamped(int fd, std::uint8_t* buf, std::size_t len, sockaddr_storage* from,
                  ngtcp2_tstamp now, ngtcp2_tstamp* rx_at) {
  iovec iov{buf, len};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(timespec))> control{};
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = sizeof(*from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  const long n = recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n < 0) return -1;
  *rx_at = now;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec rx{}, real{}, mono{};
    std::memcpy(&rx, CMSG_DATA(c), sizeof(rx));
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    auto ns = [](const timespec& t) {
      return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
    };
    const std::int64_t age = std::max<std::int64_t>(0, ns(real) - ns(rx));
    *rx_at = static_cast<ngtcp2_tstamp>(std::max<std::int64_t>(0, ns(mono) - age));
  }
  return n;
}

}  // namespace

LoadConnection::Started LoadConnection::start(const LoadOptions& options,
                                              gnutls_certificate_credentials_t cred,
                                              ngtcp2_tstamp now) {
  std::unique_ptr<LoadConnection> c(new LoadConnection(options));
  if (auto ready = c->init(cred, now); !ready) return ready.error();
  c->write_packets(now);
  return c;
}

common::Outcome LoadConnection::init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now) {
  started_ = now;
  auto opened = open_bound(options_.local, &local_now_);
  if (!opened) return opened.error();
  sock_ = std::move(*opened);
  quic::ClientParams p;
  p.max_window = 24 << 20;
  p.max_stream_window = 16 << 20;
  p.qlog = options_.count_losses;
  p.max_stream_data_bidi_local = 6 << 20;
  if (options_.hold) {
    // The response stalls after migrate_after stream bytes until migrate_now().
    hold_window_ = options_.migrate_after;
    p.max_stream_data_bidi_local = hold_window_;
  }
  p.max_stream_data_uni = 1 << 20;
  p.max_data = 15 << 20;
  p.max_streams_uni = 100;
  p.max_idle_timeout = 30 * NGTCP2_SECONDS;
  p.active_connection_id_limit = 7;
  p.sni = options_.authority;
  if (auto ready = ClientConnection::init(p, cred, local_now_, options_.server, now); !ready) {
    return ready;
  }
  // Held connections send nothing for seconds while the others open: keep them alive.
  if (options_.hold) ngtcp2_conn_set_keep_alive_timeout(conn_, 5 * NGTCP2_SECONDS);
  return {};
}

int LoadConnection::on_handshake_completed() {
  // the callback carries no timestamp: the clock every `now` here comes from
  result_.handshake_ms = ms(quic::now() - started_);
  return 0;
}

int LoadConnection::on_application_rx_key() {
  if (start_http3() != 0) return -1;
  const std::string path = "/bytes/" + std::to_string(options_.size);
  return submit_get(options_.authority, path, "", &request_id_);
}

void LoadConnection::on_stream_data(std::int64_t id, std::size_t len) {
  if (id == request_id_) response_rx_ += len;
}

void LoadConnection::consumed(std::int64_t id, std::uint64_t n) {
  ngtcp2_conn_extend_max_offset(conn_, n);
  if (options_.hold && id == request_id_ && !result_.migrated) {
    withheld_ += n;  // credited back on the new path (migrate_now)
    return;
  }
  ngtcp2_conn_extend_max_stream_offset(conn_, id, n);
}

void LoadConnection::on_qlog(std::string_view text) {
  loss_.feed(text);
  result_.losses = loss_.counts();
  if (migrated_at_ != 0) {
    const LossCounts& a = loss_at_migration_;
    result_.losses_after_migration = {result_.losses.declared_lost - a.declared_lost,
                                      result_.losses.missing - std::min(result_.losses.missing, a.missing),
                                      result_.losses.received - a.received};
  }
}

void LoadConnection::on_body(std::int64_t, std::size_t len) {
  result_.bytes += len;
  if (result_.migrated && reading_new_path_ && result_.handover_ms < 0 && migrated_at_ != 0) {
    result_.handover_ms = -2;  // marked; the timestamp is taken in on_readable
  }
  if (options_.migration != LoadMigration::none && !options_.hold && !result_.migrated &&
      result_.bytes >= options_.migrate_after) {
    migrate_pending_ = true;
  }
}

// The response's end (the only request stream).
void LoadConnection::on_end_stream(std::int64_t) {
  result_.success = result_.bytes == options_.size;
}

void LoadConnection::migrate(ngtcp2_tstamp now) {
  migrate_pending_ = false;
  sockaddr_storage bound{};
  const sockaddr_storage& addr =
      options_.migration == LoadMigration::address ? options_.migrate_to : options_.local;
  auto opened = open_bound(addr, &bound);
  if (!opened) return finish(false, "migration socket: " + opened.error().message, now);
  net::UdpSocket fresh = std::move(*opened);
  old_sock_ = std::move(sock_);
  sock_ = std::move(fresh);
  local_now_ = bound;
  new_fd_ = true;
  result_.migrated = true;
  if (options_.migration == LoadMigration::rebind) {
    ngtcp2_addr local{reinterpret_cast<sockaddr*>(&local_now_), net::sockaddr_len(local_now_)};
    ngtcp2_conn_set_local_addr(conn_, &local);
    return;
  }
  sockaddr_storage remote = options_.server;
  const ngtcp2_path path = quic::make_path(local_now_, remote);
  if (ngtcp2_conn_initiate_immediate_migration(conn_, &path, now) != 0) {
    finish(false, "ngtcp2_conn_initiate_immediate_migration refused", now);
  }
}

void LoadConnection::migrate_now(ngtcp2_tstamp now) {
  if (finished_ || result_.migrated) return;
  if (options_.migration != LoadMigration::none) migrate(now);
  if (finished_) return;
  result_.migrated = true;  // also for --migration none: the credit is released all the same
  ngtcp2_conn_extend_max_stream_offset(conn_, request_id_, std::exchange(withheld_, 0) +
                                                               options_.size);
  write_packets(now);
}

void LoadConnection::on_readable(int fd, ngtcp2_tstamp now) {
  std::array<std::uint8_t, 65536> buf;
  for (int i = 0; i < 16 && !finished_; ++i) {
    sockaddr_storage from{};
    ngtcp2_tstamp rx_at = now;
    const long n = recv_stamped(fd, buf.data(), buf.size(), &from, now, &rx_at);
    if (n < 0) break;
    ++result_.rx_datagrams;
    if (result_.migrated && fd != sock_.fd()) ++result_.rx_old_path_after_migration;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    reading_new_path_ = fd == sock_.fd();
    // ECN not read: a load client does not need it.
    const int rv = read_packet(local, from, 0, buf.data(), static_cast<std::size_t>(n), now);
    if (result_.handover_ms == -2) {
      // The kernel's arrival time of this datagram, not when this loop got to it.
      result_.handover_ms = ms(std::max(rx_at, migrated_at_) - migrated_at_);
      // The old socket stays open until the connection ends: what the server still sends
      // to the old path (probes, packets in flight) is received, not counted as lost.
    }
    if (rv != 0) return finish(false, std::string("read: ") + ngtcp2_strerror(rv), now);
    if (result_.success) return finish(true, "", now);
  }
  if (migrate_pending_) migrate(now);
  write_packets(now);
}

void LoadConnection::on_expiry(ngtcp2_tstamp now) {
  if (finished_) return;
  const int rv = ngtcp2_conn_handle_expiry(conn_, now);
  ngtcp2_conn_stat stat{};
  ngtcp2_conn_get_conn_stat(conn_, &stat);
  result_.pto_count = stat.pto_count;  // kept current: a connection that never ends has one too
  if (stat.min_rtt != UINT64_MAX) result_.min_rtt_ms = ms(stat.min_rtt);
  if (rv != 0) return finish(false, std::string("expiry: ") + ngtcp2_strerror(rv), now);
  write_packets(now);
}

ngtcp2_tstamp LoadConnection::next_deadline() const {
  return finished_ ? UINT64_MAX : ngtcp2_conn_get_expiry(conn_);
}

bool LoadConnection::send_packet(const ngtcp2_path& path, const std::uint8_t* data,
                                 std::size_t len, ngtcp2_tstamp now) {
  const sockaddr_storage local = quic::to_sockaddr(path.local);
  const sockaddr_storage to = quic::to_sockaddr(path.remote);
  const bool on_new = net::same_endpoint(local, local_now_) || !old_sock_.valid();
  const net::UdpSocket& s = on_new ? sock_ : old_sock_;
  if (on_new && result_.migrated && migrated_at_ == 0) {
    migrated_at_ = now;
    loss_at_migration_ = loss_.counts();
  }
  s.send(data, len, to, net::sockaddr_len(to));
  ++result_.tx_datagrams;
  if (result_.rx_datagrams == 0) ++result_.tx_before_reply;
  if (migrated_at_ != 0) ++result_.tx_after_migration;
  return true;
}

void LoadConnection::on_write_error(WriteError where, int rv, ngtcp2_tstamp now) {
  if (where == WriteError::http3) return finish(false, "nghttp3_conn_writev_stream", now);
  finish(false, std::string("write: ") + ngtcp2_strerror(rv), now);
}

void LoadConnection::finish(bool success, const std::string& error, ngtcp2_tstamp now) {
  if (finished_) return;
  finished_ = true;
  result_.success = success;
  result_.error = error;
  result_.duration_ms = ms(now - started_);
  ngtcp2_conn_stat stat{};
  ngtcp2_conn_get_conn_stat(conn_, &stat);
  result_.pto_count = stat.pto_count;
  if (stat.min_rtt != UINT64_MAX) result_.min_rtt_ms = ms(stat.min_rtt);
  if (success) {  // polite close, best effort
    std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
    if (const std::size_t n = write_close(buf, now); n > 0) {
      sock_.send(buf.data(), n, options_.server, net::sockaddr_len(options_.server));
    }
  }
}

}  // namespace quicstep::server_testbed
