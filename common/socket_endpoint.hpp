// Addresses given on the command line: "ADDR", "ADDR:port", "[v6]:port" or a bare IPv6
// address; parsed whole, range-checked.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace quicstep::common {

// nullopt on anything else (bad address, port not 1..65535, trailing text).
std::optional<sockaddr_storage> parse_endpoint(std::string_view text, std::uint16_t default_port);
// An IP address without port (port 0): a local address to bind to.
std::optional<sockaddr_storage> parse_ip(std::string_view text);
// The wildcard address of a family (AF_INET or AF_INET6), port 0.
sockaddr_storage wildcard(int family);
// Dotted / canonical text of the address (no port).
std::string ip_text(const sockaddr_storage& addr);
// `addr` with its port set.
sockaddr_storage with_port(sockaddr_storage addr, std::uint16_t port);

}  // namespace quicstep::common
