#include "server_testbed/gate_forward.hpp"

#include <netinet/in.h>

#include <cstring>

namespace quicstep::server_testbed {

using common::Error;
using common::Result;

namespace {
constexpr std::uint8_t kMagic[4] = {'Q', 'S', 'G', 'F'};
}

std::size_t encode_forward(std::span<std::uint8_t> out, const sockaddr_storage& client,
                           const std::uint8_t* odcid, std::size_t odcid_len, bool has_odcid,
                           std::span<const std::uint8_t> packet) {
  if (out.size() < kForwardHeaderLen + packet.size() || odcid_len > 20) return 0;
  std::uint8_t* p = out.data();
  std::memset(p, 0, kForwardHeaderLen);
  std::memcpy(p, kMagic, 4);
  p[4] = has_odcid ? 1 : 0;
  if (client.ss_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, &client, sizeof(v4));
    p[5] = 4;
    std::memcpy(p + 6, &v4.sin_port, 2);
    std::memcpy(p + 8, &v4.sin_addr, 4);
  } else if (client.ss_family == AF_INET6) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, &client, sizeof(v6));
    p[5] = 6;
    std::memcpy(p + 6, &v6.sin6_port, 2);
    std::memcpy(p + 8, &v6.sin6_addr, 16);
  } else {
    return 0;
  }
  p[24] = static_cast<std::uint8_t>(odcid_len);
  if (odcid_len > 0) std::memcpy(p + 25, odcid, odcid_len);
  if (!packet.empty()) std::memcpy(p + kForwardHeaderLen, packet.data(), packet.size());
  return kForwardHeaderLen + packet.size();
}

Result<ForwardedInitial> decode_forward(std::span<const std::uint8_t> message) {
  if (message.size() <= kForwardHeaderLen) return Error::truncated;
  const std::uint8_t* p = message.data();
  if (std::memcmp(p, kMagic, 4) != 0 || p[4] > 1 || p[24] > 20) return Error::bad_value;
  ForwardedInitial f;
  if (p[5] == 4) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    std::memcpy(&v4.sin_port, p + 6, 2);
    std::memcpy(&v4.sin_addr, p + 8, 4);
    std::memcpy(&f.client, &v4, sizeof(v4));
  } else if (p[5] == 6) {
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    std::memcpy(&v6.sin6_port, p + 6, 2);
    std::memcpy(&v6.sin6_addr, p + 8, 16);
    std::memcpy(&f.client, &v6, sizeof(v6));
  } else {
    return Error::bad_value;
  }
  f.has_odcid = p[4] == 1;
  f.odcid_len = p[24];
  std::memcpy(f.odcid.data(), p + 25, f.odcid_len);
  f.packet = message.subspan(kForwardHeaderLen);
  return f;
}

bool valid_gate_name(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string gate_run_dir(const std::string& name) { return "/run/quicstep-gate-" + name; }
std::string gate_maps_socket(const std::string& name) { return gate_run_dir(name) + "/maps.sock"; }
std::string gate_worker_socket(const std::string& name, std::uint32_t worker) {
  return gate_run_dir(name) + "/worker-" + std::to_string(worker) + ".sock";
}

}  // namespace quicstep::server_testbed
