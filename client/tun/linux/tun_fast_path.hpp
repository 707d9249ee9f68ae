// TunFastPath: quicstep-tun's kernel fast path for confirmed flows (FastPath, Linux 6.6+).
// A tc program on the TUN's egress (bpf/tun_fast_path.bpf.c) sends a confirmed flow's QUIC
// short headers straight out of the native device, rewritten to its relay socket's address
// and port and marked as the engine's sockets are; the engine adds and removes flows. On an
// upload through the relay every datagram costs the engine a TUN read, a send and a share of
// a wake-up (tests/results/2026-12-07-tun-upload-limits.md); through this it costs nothing
// of the engine's. What the server sends still comes back through the relay socket.
//
// The program's tcx link belongs to this object (not pinned): it goes with the process, so a
// dead engine leaves nothing in the kernel that sends natively. Android has no such path:
// there every packet crosses the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client/kernel/kernel_probe.hpp"
#include "client/tun/io/fast_path.hpp"
#include "common/error.hpp"

struct tun_fast_path;  // the libbpf skeleton (generated at build time)

namespace quicstep::client::tun {

class TunFastPath final : public FastPath {
 public:
  // Loads the program and links it to `device`'s egress. `mark`: the engine's sockets' mark
  // (the redirected packets take their routing table). Failures: no BPF or tcx (a kernel
  // before 6.6), not permitted, no such device, the route socket.
  static common::Result<std::unique_ptr<TunFastPath>, common::Failure> attach(
      const std::string& device, std::uint32_t mark);
  ~TunFastPath() override;
  TunFastPath(const TunFastPath&) = delete;
  TunFastPath& operator=(const TunFastPath&) = delete;

  // The device was created again (its old link went with the old device).
  common::Outcome reattach(const std::string& device);

  bool install(const common::FlowKey& flow, int relay_fd) override;
  void remove(const common::FlowKey& flow) override;
  FastPathCounters counters() override;

 private:
  explicit TunFastPath(std::uint32_t mark) : mark_(mark) {}
  common::Outcome link(const std::string& device);

  ::tun_fast_path* skel_ = nullptr;
  int link_ = -1;
  std::uint32_t mark_;
  kernel::KernelProbe probe_;  // the route a redirected packet takes (its device)
  FastPathCounters removed_;   // the sent counts of removed flows; installs, failures
};

}  // namespace quicstep::client::tun
