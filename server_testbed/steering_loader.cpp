#include "server_testbed/steering_loader.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "steering.skel.h"

namespace quicstep::server_testbed {

using common::Error;
using common::Result;

Result<std::unique_ptr<Steering>> Steering::open(std::string* errno_text) {
  ::steering* skel = steering__open_and_load();
  if (skel == nullptr) {
    if (errno_text) *errno_text = std::strerror(errno);
    return Error::unsupported;
  }
  return std::unique_ptr<Steering>(new Steering(skel));
}

Steering::~Steering() {
  unpin();
  steering__destroy(skel_);
}

Result<void> Steering::pin(const std::string& dir, std::string* errno_text) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (errno_text) *errno_text = dir + ": " + std::strerror(errno);
    return Error::bad_value;
  }
  pin_dir_ = dir;
  const std::pair<bpf_map*, const char*> maps[] = {{skel_->maps.qs_sockets, "sockets"},
                                                   {skel_->maps.qs_config, "config"},
                                                   {skel_->maps.qs_allow, "allow"}};
  for (const auto& [map, name] : maps) {
    const std::string path = dir + "/" + name;
    unlink(path.c_str());  // a stale pin of a crashed server
    if (bpf_map__pin(map, path.c_str()) != 0) {
      if (errno_text) *errno_text = path + ": " + std::strerror(errno);
      return Error::bad_value;
    }
  }
  return {};
}

void Steering::unpin() {
  if (pin_dir_.empty()) return;
  for (const char* name : {"sockets", "config", "allow"}) {
    unlink((pin_dir_ + "/" + name).c_str());
  }
  rmdir(pin_dir_.c_str());
  pin_dir_.clear();
}

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
