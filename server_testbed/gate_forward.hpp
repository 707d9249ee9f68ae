// The message quicstep-gate sends a worker for each Initial whose token it verified: a fixed
// header with the client's address and the original DCID, then the client's datagram as it
// arrived. Sent over a unix datagram socket per worker (bounded by the socket's queue: the
// gate counts a full queue as dropped); the worker then accepts the Initial as if it came
// from the client, and answers the client directly from its UDP socket.
//
// Header (48 octets): "QSGF" | flags (bit 0: odcid present = Retry token) | family (4|6) |
// port (2, network order) | address (16) | odcid_len | odcid (20) | 3 zero octets.
// Also here: the names of the shared state of a gate called NAME (README "Retry gate").
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "common/error.hpp"

namespace quicstep::server_testbed {

constexpr std::size_t kForwardHeaderLen = 48;

struct ForwardedInitial {
  sockaddr_storage client{};
  bool has_odcid = false;  // a Retry token was verified: odcid is the original DCID
  std::array<std::uint8_t, 20> odcid{};
  std::size_t odcid_len = 0;
  std::span<const std::uint8_t> packet;  // points into the decoded message
};

// Writes header + packet into out; returns the length, or 0 when out is too small, the
// address is neither IPv4 nor IPv6, or odcid_len > 20.
std::size_t encode_forward(std::span<std::uint8_t> out, const sockaddr_storage& client,
                           const std::uint8_t* odcid, std::size_t odcid_len, bool has_odcid,
                           std::span<const std::uint8_t> packet);
// Errors: truncated (shorter than the header or no packet), bad_value (magic, family,
// odcid_len > 20).
common::Result<ForwardedInitial> decode_forward(std::span<const std::uint8_t> message);

// NAME: 1-32 letters, digits, '-' or '_'.
bool valid_gate_name(const std::string& name);
std::string gate_run_dir(const std::string& name);  // /run/quicstep-gate-NAME
std::string gate_maps_socket(const std::string& name);  // .../maps.sock (gate_map_share)
std::string gate_worker_socket(const std::string& name, std::uint32_t worker);  // .../worker-I.sock

}  // namespace quicstep::server_testbed
