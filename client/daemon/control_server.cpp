#include "client/daemon/control_server.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>

namespace quicstep::client::daemon {
namespace asio = boost::asio;
using local = asio::local::stream_protocol;
using tcp = asio::ip::tcp;

namespace {

// Reads one request (up to a newline or 4 KiB), answers, closes. Owns itself.
template <typename Socket>
struct Session : std::enable_shared_from_this<Session<Socket>> {
  Socket socket;
  asio::streambuf buf{4096};
  std::string reply;
  std::function<std::string(const std::string&)> answer;

  Session(Socket s, std::function<std::string(const std::string&)> a)
      : socket(std::move(s)), answer(std::move(a)) {}

  void start(const char* delimiter) {
    auto self = this->shared_from_this();
    asio::async_read_until(socket, buf, delimiter,
                           [self](const boost::system::error_code& ec, std::size_t) {
                             if (ec && ec != asio::error::eof) return;
                             std::string text(asio::buffers_begin(self->buf.data()),
                                              asio::buffers_end(self->buf.data()));
                             self->reply = self->answer(text);
                             asio::async_write(self->socket, asio::buffer(self->reply),
                                               [self](const boost::system::error_code&,
                                                      std::size_t) {
                                                 boost::system::error_code ignored;
                                                 self->socket.shutdown(Socket::shutdown_both,
                                                                       ignored);
                                               });
                           });
  }
};

std::string first_word(const std::string& text) {
  std::size_t end = text.find_first_of(" \r\n");
  return text.substr(0, end);
}

}  // namespace

ControlServer::ControlServer(asio::io_context& io, std::string control_path,
                             std::string metrics_listen, Handler handler)
    : io_(io),
      control_path_(std::move(control_path)),
      metrics_listen_(std::move(metrics_listen)),
      handler_(std::move(handler)),
      control_(io),
      metrics_(io) {}

ControlServer::~ControlServer() {
  boost::system::error_code ignored;
  control_.close(ignored);
  metrics_.close(ignored);
  if (!control_path_.empty()) ::unlink(control_path_.c_str());
}

common::Outcome ControlServer::start() {
  boost::system::error_code ec;
  const std::string dir = control_path_.substr(0, control_path_.rfind('/'));
  ::mkdir(dir.c_str(), 0755);
  ::unlink(control_path_.c_str());
  control_.open(local(), ec);
  if (!ec) control_.bind(local::endpoint(control_path_), ec);
  if (!ec) control_.listen(16, ec);
  if (ec) return common::Failure("control socket " + control_path_ + ": " + ec.message());
  ::chmod(control_path_.c_str(), 0660);
  accept_control();
  if (metrics_listen_.empty()) return {};
  const auto colon = metrics_listen_.rfind(':');
  unsigned port = 0;
  std::string host = colon == std::string::npos ? "" : metrics_listen_.substr(0, colon);
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  const char* p = metrics_listen_.data() + colon + 1;
  const char* end = metrics_listen_.data() + metrics_listen_.size();
  auto [ptr, perr] = std::from_chars(p, end, port);
  auto addr = asio::ip::make_address(host, ec);
  if (colon == std::string::npos || perr != std::errc() || ptr != end || port > 65535 || ec) {
    return common::Failure("metrics_listen: not host:port: `" + metrics_listen_ + "'");
  }
  tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  metrics_.open(ep.protocol(), ec);
  if (!ec) metrics_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) metrics_.bind(ep, ec);
  if (!ec) metrics_.listen(16, ec);
  if (ec) return common::Failure("metrics endpoint " + metrics_listen_ + ": " + ec.message());
  accept_metrics();
  return {};
}

void ControlServer::accept_control() {
  control_.async_accept([this](const boost::system::error_code& ec, local::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      std::make_shared<Session<local::socket>>(std::move(s), [this](const std::string& t) {
        return handler_(first_word(t));
      })->start("\n");
    }
    accept_control();
  });
}

void ControlServer::accept_metrics() {
  metrics_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      std::make_shared<Session<tcp::socket>>(std::move(s), [this](const std::string& t) {
        if (t.rfind("GET /metrics ", 0) != 0 && t.rfind("GET /metrics\r", 0) != 0) {
          return std::string("HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
        const std::string body = handler_("metrics");
        return "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      })->start("\r\n\r\n");
    }
    accept_metrics();
  });
}

}  // namespace quicstep::client::daemon
