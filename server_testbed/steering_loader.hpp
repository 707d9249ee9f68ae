// Steering: owns the loaded SK_REUSEPORT program and its maps (a libbpf skeleton generated
// at build time from bpf/steering.bpf.c). RAII: the destructor destroys the skeleton; the
// kernel detaches the program when the last socket of the reuseport group closes.
//
// Use: open() → set_config() → for each worker socket after bind(): add_socket(i, fd) →
// attach(any socket fd of the group). counters() any time, from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "server_testbed/bpf/steering_shared.h"

struct steering;  // the generated skeleton

namespace quicstep::server_testbed {

class Steering {
 public:
  // Loads the program and maps into the kernel. Failure: the errno text of the refusal (no
  // BPF: not root, a kernel without SK_REUSEPORT).
  static common::Result<std::unique_ptr<Steering>, common::Failure> open();
  ~Steering();
  Steering(const Steering&) = delete;
  Steering& operator=(const Steering&) = delete;

  // Errors: bad_value (the kernel refused the write).
  common::Result<void> set_config(const qs_steer_config& config);
  // Puts a bound SO_REUSEPORT UDP socket at index worker of the sockarray.
  // Errors: bad_value (index out of range, socket not in a reuseport group).
  common::Result<void> add_socket(std::uint32_t worker, int fd);
  // SO_ATTACH_REUSEPORT_EBPF on fd (any socket of the group). Errors: bad_value.
  common::Result<void> attach(int fd);
  // Gate mode: the maps quicstep-gate needs (sockarray, config, allowlist), owned here.
  int sockets_map_fd() const;
  int config_map_fd() const;
  int allow_map_fd() const;
  // Sum over CPUs; zeros if the map cannot be read.
  qs_steer_counters counters() const;

  // For BPF_PROG_TEST_RUN in tests: the tc entry running the same decision.
  int test_prog_fd() const;

 private:
  explicit Steering(::steering* skel) : skel_(skel) {}
  ::steering* skel_;
};

}  // namespace quicstep::server_testbed
