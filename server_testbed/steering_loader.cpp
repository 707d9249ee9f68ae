#include "server_testbed/steering_loader.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "steering.skel.h"

namespace quicstep::server_testbed {

using common::Error;
using common::Result;

Result<std::unique_ptr<Steering>, common::Failure> Steering::open() {
  ::steering* skel = steering__open_and_load();
  if (skel == nullptr) return common::Failure(std::strerror(errno));
  return std::unique_ptr<Steering>(new Steering(skel));
}

Steering::~Steering() { steering__destroy(skel_); }

int Steering::sockets_map_fd() const { return bpf_map__fd(skel_->maps.qs_sockets); }
int Steering::config_map_fd() const { return bpf_map__fd(skel_->maps.qs_config); }
int Steering::allow_map_fd() const { return bpf_map__fd(skel_->maps.qs_allow); }

Result<void> Steering::set_config(const qs_steer_config& config) {
  const std::uint32_t key = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.qs_config), &key, &config, BPF_ANY) != 0) {
    return Error::bad_value;
  }
  return {};
}

Result<void> Steering::add_socket(std::uint32_t worker, int fd) {
  const std::uint32_t value = static_cast<std::uint32_t>(fd);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.qs_sockets), &worker, &value, BPF_ANY) != 0) {
    return Error::bad_value;
  }
  return {};
}

Result<void> Steering::attach(int fd) {
  const int prog = bpf_program__fd(skel_->progs.qs_select_socket);
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog, sizeof(prog)) != 0) {
    return Error::bad_value;
  }
  return {};
}

qs_steer_counters Steering::counters() const {
  qs_steer_counters sum{};
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return sum;
  std::vector<qs_steer_counters> per_cpu(static_cast<std::size_t>(ncpu));
  const std::uint32_t key = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.qs_counters), &key, per_cpu.data()) != 0) {
    return sum;
  }
  for (const auto& c : per_cpu) {
    sum.packets += c.packets;
    sum.steered += c.steered;
    sum.fallback += c.fallback;
    sum.malformed += c.malformed;
    sum.select_failed += c.select_failed;
    sum.disabled += c.disabled;
    sum.gate += c.gate;
    sum.gate_absent += c.gate_absent;
    sum.allowlisted += c.allowlisted;
  }
  return sum;
}

int Steering::test_prog_fd() const { return bpf_program__fd(skel_->progs.qs_steer_test); }

}  // namespace quicstep::server_testbed
