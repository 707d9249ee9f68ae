// Socket addresses (sockaddr_storage, AF_INET or AF_INET6): parsed from the command line
// ("ADDR", "ADDR:port", "[v6]:port" or a bare IPv6 address; whole string, range-checked),
// printed, compared. No I/O.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace quicstep::net {

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
// The length of the family's sockaddr (sockaddr_in6 for AF_INET6, else sockaddr_in).
socklen_t sockaddr_len(const sockaddr_storage& addr);
// "198.18.0.1:443", "[2001:db8::1]:443".
std::string to_string(const sockaddr_storage& addr);
// Same family and address; same_endpoint: and the same port.
bool same_ip(const sockaddr_storage& a, const sockaddr_storage& b);
bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b);

}  // namespace quicstep::net
