// quicstep-https: the cluster's HTTPS-over-TCP side (QUICstep's fallback path goes over TCP),
// small on purpose: a blocking accept loop and one thread per accepted connection (at most
// --max-clients at once), GnuTLS, HTTP/1.1 GET /bytes/N. A SYN flood never reaches accept():
// what it fights over is the kernel's SYN queue, which --backlog sizes (with the namespace's
// net.core.somaxconn and net.ipv4.tcp_max_syn_backlog). Prints its counters as one JSON line
// at exit.
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "net/clock.hpp"
#include "net/socket_endpoint.hpp"

namespace {

std::atomic<bool> g_stop{false};

struct Counters {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> served{0};
  std::atomic<std::uint64_t> tls_failed{0};
  std::atomic<std::uint64_t> bad_request{0};
  std::atomic<std::uint64_t> refused_busy{0};
  std::atomic<unsigned> active{0};
};

// "198.18.230.10:443" or "[2001:db8:230::10]:443" (port 443 when omitted).
bool parse_listen(const std::string& text, sockaddr_storage* out, socklen_t* len) {
  const auto endpoint = quicstep::net::parse_endpoint(text, 443);
  if (!endpoint) return false;
  *out = *endpoint;
  *len = endpoint->ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  return true;
}

// The size N of "GET /bytes/N HTTP/1.1", or -1.
long long requested_size(const std::string& head, std::uint64_t max_body) {
  static const std::string prefix = "GET /bytes/";
  if (head.compare(0, prefix.size(), prefix) != 0) return -1;
  const char* p = head.data() + prefix.size();
  const char* end = head.data() + head.size();
  std::uint64_t n = 0;
  const auto [stop, ec] = std::from_chars(p, end, n);
  if (ec != std::errc{} || stop == end || *stop != ' ' || n > max_body) return -1;
  return static_cast<long long>(n);
}

bool send_all(gnutls_session_t s, const char* data, std::size_t len) {
  while (len > 0) {
    const ssize_t n = gnutls_record_send(s, data, len);
    if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
    if (n < 0) return false;
    data += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

// One connection: TLS handshake, requests until the client closes or 10 s of silence.
void serve(int fd, gnutls_certificate_credentials_t cred, std::uint64_t max_body, Counters* c) {
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  gnutls_session_t s = nullptr;
  gnutls_init(&s, GNUTLS_SERVER);
  gnutls_set_default_priority(s);
  gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
  gnutls_transport_set_int(s, fd);
  gnutls_handshake_set_timeout(s, 10000);
  int r;
  do {
    r = gnutls_handshake(s);
  } while (r < 0 && !gnutls_error_is_fatal(r));
  if (r < 0) {
    ++c->tls_failed;
  } else {
    std::string head;
    char buf[4096];
    static const std::string chunk(16384, 'x');
    while (true) {
      const ssize_t n = gnutls_record_recv(s, buf, sizeof(buf));
      if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
      if (n <= 0) break;
      head.append(buf, static_cast<std::size_t>(n));
      const auto end = head.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (head.size() > 16384) break;
        continue;
      }
      const long long size = requested_size(head, max_body);
      head.erase(0, end + 4);
      if (size < 0) {
        ++c->bad_request;
        static const char kBad[] =
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        send_all(s, kBad, sizeof(kBad) - 1);
        break;
      }
      const std::string response_head = "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n"
                                        "content-length: " + std::to_string(size) + "\r\n\r\n";
      bool ok = send_all(s, response_head.data(), response_head.size());
      for (auto left = static_cast<std::uint64_t>(size); ok && left > 0;) {
        const std::size_t part = std::min<std::uint64_t>(left, chunk.size());
        ok = send_all(s, chunk.data(), part);
        left -= part;
      }
      if (!ok) break;
      ++c->served;
    }
    gnutls_bye(s, GNUTLS_SHUT_WR);
  }
  gnutls_deinit(s);
  close(fd);
  --c->active;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-https: HTTPS/1.1 over TCP serving GET /bytes/N"};
  std::string listen_text, cert, key;
  int backlog = 511;
  unsigned max_clients = 256;
  std::uint64_t max_body = 1ull << 30;
  double duration = 0;
  app.add_option("--listen", listen_text, "ADDR:PORT or [V6]:PORT")->required();
  app.add_option("--cert", cert, "PEM certificate chain")->required();
  app.add_option("--key", key, "PEM private key")->required();
  app.add_option("--backlog", backlog, "listen() backlog (capped by net.core.somaxconn)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--max-clients", max_clients, "connections served at once; more are closed")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-body", max_body, "largest N of /bytes/N");
  app.add_option("--duration", duration, "exit after this many seconds (0: on SIGINT/SIGTERM)");
  CLI11_PARSE(app, argc, argv);

  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  if (!parse_listen(listen_text, &addr, &addr_len)) {
    std::cerr << "quicstep-https: --listen is not ADDR:PORT: `" << listen_text << "'\n";
    return 2;
  }
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_certificate_allocate_credentials(&cred);
  if (const int r = gnutls_certificate_set_x509_key_file(cred, cert.c_str(), key.c_str(),
                                                         GNUTLS_X509_FMT_PEM);
      r < 0) {
    std::cerr << "quicstep-https: " << cert << ", " << key << ": " << gnutls_strerror(r) << "\n";
    return 1;
  }
  const int lfd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 ||
      listen(lfd, backlog) != 0) {
    std::cerr << "quicstep-https: " << listen_text << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::signal(SIGPIPE, SIG_IGN);
  std::cout << "{\"listening\":\"" << listen_text << "\"}" << std::endl;

  Counters counters;
  const auto t0 = quicstep::net::monotonic_now();
  while (!g_stop) {
    if (duration > 0) {
      // The clock's whole seconds, compared (so the loop ends within a second of it).
      const std::int64_t seconds =
          quicstep::net::monotonic_now().ns / 1'000'000'000 - t0.ns / 1'000'000'000;
      if (static_cast<double>(seconds) > duration) break;
    }
    pollfd p{lfd, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++counters.accepted;
    if (counters.active >= max_clients) {
      ++counters.refused_busy;
      close(fd);
      continue;
    }
    ++counters.active;
    std::thread(serve, fd, cred, max_body, &counters).detach();
  }
  close(lfd);
  for (int i = 0; i < 100 && counters.active > 0; ++i) usleep(50000);
  const nlohmann::json out = {{"accepted", counters.accepted.load()},
                              {"served", counters.served.load()},
                              {"tls_failed", counters.tls_failed.load()},
                              {"bad_request", counters.bad_request.load()},
                              {"refused_busy", counters.refused_busy.load()},
                              {"active_at_exit", counters.active.load()}};
  std::cout << out.dump() << std::endl;
  if (counters.active == 0) gnutls_certificate_free_credentials(cred);
  return 0;
}
