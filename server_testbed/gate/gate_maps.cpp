#include "server_testbed/gate/gate_maps.hpp"

#include <bpf/bpf.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server_testbed/gate_forward.hpp"
#include "server_testbed/gate_map_share.hpp"

namespace quicstep::server_testbed::gate {

qs_allow_key allow_key(const sockaddr_storage& client) {
  qs_allow_key key{};
  if (client.ss_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, &client, sizeof(v4));
    key.family = 4;
    std::memcpy(key.port, &v4.sin_port, 2);
    std::memcpy(key.addr, &v4.sin_addr, 4);
  } else if (client.ss_family == AF_INET6) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, &client, sizeof(v6));
    key.family = 6;
    std::memcpy(key.port, &v6.sin6_port, 2);
    std::memcpy(key.addr, &v6.sin6_addr, 16);
  }
  return key;
}

GateMaps::Opened GateMaps::open(const std::string& name) {
  GateMapFds fds;
  if (auto received = receive_gate_maps(gate_maps_socket(name), &fds); !received) {
    return common::Failure(received.error().message + " (is quicstep-server running with --gate " +
                           name + " in this namespace?)");
  }
  std::unique_ptr<GateMaps> maps(new GateMaps());
  maps->sockets_ = fds.sockets;
  maps->config_ = fds.config;
  maps->allow_ = fds.allow;
  return maps;
}

GateMaps::~GateMaps() {
  for (int fd : {sockets_, config_, allow_}) {
    if (fd >= 0) close(fd);
  }
}

bool GateMaps::read_config(qs_steer_config* out) const {
  const std::uint32_t key = 0;
  return bpf_map_lookup_elem(config_, &key, out) == 0;
}

common::Outcome GateMaps::add_gate_socket(int fd) {
  const std::uint32_t key = QS_GATE_SLOT;
  const std::uint32_t value = static_cast<std::uint32_t>(fd);  // the map holds u32 fds
  if (bpf_map_update_elem(sockets_, &key, &value, BPF_ANY) != 0) {
    return common::Failure(std::string("sockarray slot ") + std::to_string(key) + ": " +
                           std::strerror(errno));
  }
  return {};
}

bool GateMaps::allow(const sockaddr_storage& client, std::uint64_t expiry_ns) {
  const qs_allow_key key = allow_key(client);
  return bpf_map_update_elem(allow_, &key, &expiry_ns, BPF_ANY) == 0;
}

}  // namespace quicstep::server_testbed::gate
