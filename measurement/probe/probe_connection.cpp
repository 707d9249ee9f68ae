#include "measurement/probe/probe_connection.hpp"

#include <nghttp3/nghttp3.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "net/socket_endpoint.hpp"
#include "quic/path.hpp"

namespace quicstep::measurement::probe {

namespace {

using net::UdpSocket;
using net::sockaddr_len;

constexpr int kMaxReadsPerWakeup = 16;
constexpr std::string_view kUserAgent = "quicstep-probe";

// A socket bound to `local` (port 0) and connected to `server`, so ICMP errors (port
// unreachable) come back as ECONNREFUSED; *bound gets the local address the kernel chose.
UdpSocket::Opened open_connected(const sockaddr_storage& local, const sockaddr_storage& server,
                                 sockaddr_storage* bound) {
  auto opened = UdpSocket::open_client(local, sockaddr_len(local));
  if (!opened) return opened;
  const UdpSocket& s = *opened;
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&server), sockaddr_len(server)) != 0) {
    return common::Failure(std::string("connect: ") + std::strerror(errno));
  }
  socklen_t len = sizeof(*bound);
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(bound), &len);
  return opened;
}

double ms(ngtcp2_tstamp d) { return static_cast<double>(d) / NGTCP2_MILLISECONDS; }

std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace

ProbeConnection::Started ProbeConnection::start(const TryOptions& options,
                                                gnutls_certificate_credentials_t cred,
                                                FdRegistry& registry, ngtcp2_tstamp now) {
  std::unique_ptr<ProbeConnection> c(new ProbeConnection(options, registry));
  if (auto ready = c->init(cred, now); !ready) return ready.error();
  c->write_packets(now);
  return c;
}

common::Outcome ProbeConnection::init(gnutls_certificate_credentials_t cred, ngtcp2_tstamp now) {
  started_ = now;
  last_ts_ = now;
  step_deadline_ = now + (options_.first_answer_timeout != 0
                              ? std::min(options_.first_answer_timeout, options_.step_timeout)
                              : options_.step_timeout);
  auto opened = open_connected(options_.local, options_.server, &local_now_);
  if (!opened) return opened.error();
  sock_ = std::move(*opened);
  registry_.watch(sock_.fd(), this);
  quic::ClientParams p;
  p.max_stream_data_bidi_local = 1 << 20;
  p.max_stream_data_uni = 256 << 10;
  p.max_data = 2 << 20;
  p.max_streams_uni = 100;
  p.max_idle_timeout = 30 * NGTCP2_SECONDS;
  p.active_connection_id_limit = 8;
  p.qlog = true;  // counts the server's NEW_CONNECTION_ID frames
  p.sni = options_.sni;
  p.alpn = options_.alpn;
  return ClientConnection::init(p, cred, local_now_, options_.server, now);
}

ProbeConnection::~ProbeConnection() {
  if (conn_ && outcome_.handshake_done && !ngtcp2_conn_is_in_draining_period(conn_) &&
      !ngtcp2_conn_is_in_closing_period(conn_) && sock_.valid()) {
    // A polite close so the server frees the connection now (best effort).
    std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf;
    if (const std::size_t n = write_close(buf, last_ts_); n > 0) {
      // On both paths: a server that ignores the new one still frees the connection.
      sock_.send(buf.data(), n, options_.server, sockaddr_len(options_.server));
      if (old_sock_.valid()) {
        old_sock_.send(buf.data(), n, options_.server, sockaddr_len(options_.server));
      }
    }
  }
  close_sockets();
}

void ProbeConnection::close_sockets() {
  if (sock_.valid()) registry_.unwatch(sock_.fd());
  if (old_sock_.valid()) registry_.unwatch(old_sock_.fd());
  sock_ = UdpSocket();
  old_sock_ = UdpSocket();
}

int ProbeConnection::on_handshake_completed() {
  outcome_.handshake_done = true;
  step_ = Step::first_response;
  // The handshake's own timestamp is not passed to this callback; the step deadline is
  // refreshed by the caller (see read_socket) once the packet has been processed.
  if (start_http3() != 0) return -1;
  return submit_get(&first_stream_);
}

int ProbeConnection::submit_get(std::int64_t* stream_id) {
  return ClientConnection::submit_get(options_.sni, "/", kUserAgent, stream_id);
}

void ProbeConnection::on_stream_data(std::int64_t id, std::size_t len) {
  if (reading_old_ && id == second_stream_) second_on_old_ += len;
}

void ProbeConnection::on_header(std::int64_t id, std::int32_t token, std::string_view text) {
  if (id != first_stream_) return;
  if (token == NGHTTP3_QPACK_TOKEN__STATUS) {
    int status = 0;
    for (char c : text) {
      if (c < '0' || c > '9' || status > 999) { status = 0; break; }
      status = status * 10 + (c - '0');
    }
    outcome_.facts.status = status;
  } else if (token == NGHTTP3_QPACK_TOKEN_SERVER) {
    outcome_.facts.server.assign(text.substr(0, 128));
  }
}

void ProbeConnection::on_end_stream(std::int64_t id) {
  if (id == first_stream_ && step_ == Step::first_response) {
    outcome_.first_response = true;
    switch_pending_ = true;
  } else if (id == second_stream_ && step_ == Step::second_response) {
    finish(second_on_old_ > 0 ? Label::response_on_old_path : Label::pass, std::nullopt, 0);
  }
}

void ProbeConnection::on_path_validation(bool success) {
  if (step_ != Step::validating) return;
  pv_result_pending_ = true;
  pv_success_ = success;
}

void ProbeConnection::on_qlog(std::string_view text) {
  if (step_ != Step::handshake && step_ != Step::first_response) return;
  if (text.find("transport:packet_received") == std::string_view::npos) return;
  outcome_.facts.spare_cids += count_of(text, "\"frame_type\":\"new_connection_id\"");
}

void ProbeConnection::collect_facts() {
  facts_collected_ = true;
  ConnectionFacts& f = outcome_.facts;
  f.version = ngtcp2_conn_get_negotiated_version(conn_);
  gnutls_datum_t alpn{};
  if (gnutls_alpn_get_selected_protocol(tls_, &alpn) == 0) {
    f.alpn.assign(reinterpret_cast<const char*>(alpn.data), alpn.size);
  }
  if (const ngtcp2_transport_params* tp = ngtcp2_conn_get_remote_transport_params(conn_)) {
    f.disable_active_migration = tp->disable_active_migration != 0;
    f.active_connection_id_limit = tp->active_connection_id_limit;
    f.preferred_address = tp->preferred_address_present != 0;
    f.max_idle_timeout_ms = tp->max_idle_timeout / NGTCP2_MILLISECONDS;
  }
}

void ProbeConnection::switch_path(ngtcp2_tstamp now) {
  switch_pending_ = false;
  collect_facts();
  outcome_.facts.first_response_ms = ms(now - started_);
  const bool active = options_.kind != TryKind::nat_rebinding;
  if (active && outcome_.facts.disable_active_migration) {
    return finish(Label::refused, std::nullopt, now);
  }
  sockaddr_storage bound{};
  const sockaddr_storage& from =
      options_.kind == TryKind::address_migration ? options_.second_local : options_.local;
  auto opened = open_connected(from, options_.server, &bound);
  if (!opened) return finish(Label::connection_closed, "socket: " + opened.error().message, now);
  UdpSocket fresh = std::move(*opened);
  local_old_ = local_now_;
  local_now_ = bound;
  old_sock_ = std::move(sock_);
  sock_ = std::move(fresh);
  registry_.watch(sock_.fd(), this);
  step_deadline_ = now + options_.step_timeout;
  if (!active) {
    ngtcp2_addr local{reinterpret_cast<sockaddr*>(&local_now_), sockaddr_len(local_now_)};
    ngtcp2_conn_set_local_addr(conn_, &local);
    if (submit_get(&second_stream_) != 0) {
      return finish(Label::connection_closed, "second request", now);
    }
    step_ = Step::second_response;
    return;
  }
  sockaddr_storage remote = options_.server;
  const ngtcp2_path path = quic::make_path(local_now_, remote);
  step_ = Step::validating;
  const int rv = ngtcp2_conn_initiate_migration(conn_, &path, now);
  if (rv == NGTCP2_ERR_CONN_ID_BLOCKED) return finish(Label::no_spare_cid, std::nullopt, now);
  if (rv == NGTCP2_ERR_INVALID_STATE) return finish(Label::refused, std::nullopt, now);
  if (rv != 0) return finish(Label::connection_closed, std::nullopt, now);
}

void ProbeConnection::read_socket(UdpSocket& sock, bool old_path, ngtcp2_tstamp now) {
  std::array<std::uint8_t, 65536> buf;
  for (int i = 0; i < kMaxReadsPerWakeup && !finished_ && sock.valid(); ++i) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    std::uint32_t ecn = 0;
    const long n = sock.recv(buf.data(), buf.size(), &from, &from_len, &ecn);
    if (n < 0) {
      if (errno == ECONNREFUSED) {
        icmp_seen_ = true;
        if (step_ == Step::handshake) finish(Label::handshake_failed, "icmp_unreachable", now);
        continue;
      }
      break;
    }
    // After the switch, what the old socket gets is handed over as if on the current path,
    // so that a response sent there is seen (and counted against the server).
    const sockaddr_storage local =
        old_path ? quic::to_sockaddr(ngtcp2_conn_get_path(conn_)->local) : local_now_;
    const Step before = step_;
    reading_old_ = old_path;
    const int rv = read_packet(local, from, ecn, buf.data(), static_cast<std::size_t>(n), now);
    reading_old_ = false;
    if (rv != 0) return on_read_error(rv, now);
    if (before == Step::handshake && !answered_) {
      answered_ = true;  // the server answers: the whole step timeout applies
      step_deadline_ = std::max(step_deadline_, started_ + options_.step_timeout);
    }
    if (before == Step::handshake && step_ == Step::first_response) {
      outcome_.facts.handshake_ms = ms(now - started_);
      step_deadline_ = now + options_.step_timeout;
    }
    if (finished_) return;
  }
}

void ProbeConnection::on_read_error(int rv, ngtcp2_tstamp now) {
  if (rv == NGTCP2_ERR_RECV_VERSION_NEGOTIATION) {
    return finish(Label::handshake_failed, "version_negotiation", now);
  }
  if (step_ == Step::handshake) {
    return finish(Label::handshake_failed,
                  rv == NGTCP2_ERR_DRAINING ? "connection_closed" : "handshake_failed", now);
  }
  finish(Label::connection_closed, "connection_closed", now);
}

void ProbeConnection::on_readable(int fd, ngtcp2_tstamp now) {
  if (finished_) return;
  last_ts_ = now;
  if (fd == sock_.fd()) {
    read_socket(sock_, false, now);
  } else if (old_sock_.valid() && fd == old_sock_.fd()) {
    read_socket(old_sock_, true, now);
  }
  after_io(now);
}

void ProbeConnection::after_io(ngtcp2_tstamp now) {
  if (!finished_ && pv_result_pending_) {
    pv_result_pending_ = false;
    if (!pv_success_) return finish(Label::path_validation_failed, std::nullopt, now);
    if (submit_get(&second_stream_) != 0) {
      return finish(Label::connection_closed, "second request", now);
    }
    step_ = Step::second_response;
    step_deadline_ = now + options_.step_timeout;
  }
  if (!finished_ && switch_pending_) switch_path(now);
  if (!finished_) write_packets(now);
}

void ProbeConnection::fail_step(ngtcp2_tstamp now) {
  switch (step_) {
    case Step::handshake:
      return finish(Label::handshake_failed, icmp_seen_ ? "icmp_unreachable" : "timeout", now);
    case Step::first_response:
      return finish(Label::connection_closed, "response_timeout", now);
    case Step::validating:
      return finish(Label::path_validation_failed, std::nullopt, now);
    case Step::second_response:
      return finish(second_on_old_ > 0 ? Label::response_on_old_path
                                       : Label::timeout_after_switch, std::nullopt, now);
    case Step::done:
      return;
  }
}

void ProbeConnection::on_expiry(ngtcp2_tstamp now) {
  if (finished_) return;
  last_ts_ = now;
  if (now >= step_deadline_) return fail_step(now);
  if (now >= ngtcp2_conn_get_expiry(conn_)) {
    const int rv = ngtcp2_conn_handle_expiry(conn_, now);
    if (rv != 0) {
      // Idle timeout or too many losses: the step did not complete.
      return fail_step(now);
    }
  }
  after_io(now);
}

ngtcp2_tstamp ProbeConnection::next_deadline() const {
  if (finished_) return UINT64_MAX;
  return std::min(step_deadline_, ngtcp2_conn_get_expiry(conn_));
}

bool ProbeConnection::send_packet(const ngtcp2_path& path, const std::uint8_t* data,
                                  std::size_t len, ngtcp2_tstamp now) {
  const sockaddr_storage local = quic::to_sockaddr(path.local);
  const bool on_old = old_sock_.valid() && net::same_endpoint(local, local_old_) &&
                      !net::same_endpoint(local, local_now_);
  const UdpSocket& s = on_old ? old_sock_ : sock_;
  if (!s.send(data, len, options_.server, sockaddr_len(options_.server)) &&
      errno == ECONNREFUSED) {
    icmp_seen_ = true;
    if (step_ == Step::handshake) {
      finish(Label::handshake_failed, "icmp_unreachable", now);
      return false;
    }
  }
  return true;
}

void ProbeConnection::on_write_error(WriteError where, int rv, ngtcp2_tstamp now) {
  if (where == WriteError::http3) {
    return finish(Label::connection_closed, "nghttp3_conn_writev_stream", now);
  }
  on_read_error(rv, now);
}

void ProbeConnection::finish(Label label, std::optional<std::string> error, ngtcp2_tstamp) {
  if (finished_) return;
  finished_ = true;
  step_ = Step::done;
  outcome_.label = label;
  if (outcome_.handshake_done && !facts_collected_) collect_facts();
  if (error && !outcome_.first_response) outcome_.error = std::move(error);
}

}  // namespace quicstep::measurement::probe
