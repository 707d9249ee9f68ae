// ControlServer: the daemon's two listening sockets on its Asio loop.
//  - a Unix stream socket (/run/quicstep/control.sock, mode 0660): one request line
//    ("status", "flows", "metrics"), one reply, then the connection closes;
//  - a tiny HTTP/1.0 server on localhost for Prometheus: GET /metrics (anything else: 404).
// Requests are answered by a handler on the loop thread. Sockets close with the object.
#pragma once

#include <utility>  // boost 1.74 asio/awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/error.hpp"

namespace quicstep::client::daemon {

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& request)>;

  // metrics_listen: "host:port", or empty for no metrics endpoint.
  ControlServer(boost::asio::io_context& io, std::string control_path,
                std::string metrics_listen, Handler handler);
  ~ControlServer();

  // Binds both sockets. Errors: the directory cannot be made, the address is in use or
  // cannot be parsed ("127.0.0.1:9464", "[::1]:9464").
  common::Outcome start();

 private:
  void accept_control();
  void accept_metrics();

  boost::asio::io_context& io_;
  std::string control_path_;
  std::string metrics_listen_;
  Handler handler_;
  boost::asio::local::stream_protocol::acceptor control_;
  boost::asio::ip::tcp::acceptor metrics_;
};

}  // namespace quicstep::client::daemon
