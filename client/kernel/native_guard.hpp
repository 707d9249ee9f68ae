// NativeGuard: loads the native path's tc programs (client/kernel/bpf/native_guard.bpf.c) and
// attaches them to native devices: ng_egress drops what must never leave natively (DNS, TCP
// but to native prefixes, QUIC long headers, GSO batches holding one) and counts the QUIC
// short headers that do; ng_ingress counts QUIC answers. Both count a watched flow's packets
// in ng_watch, where the migration watchdog reads them. ng_channel_egress, on the channel
// device, sets UDP's source to the tunnel address (stateless addressing on the routed path;
// native_guard.bpf.c says why nft cannot), and drops other packets whose source nft did not
// set (its table flushed).
//
// Everything is pinned under a directory on a BPF filesystem (mounted at /sys/fs/bpf if
// nothing is), so the guard outlives the process that attached it: a killed daemon leaves
// the native devices guarded (invariant 1), and `remove` (or the next start) takes it off.
// Ethernet and raw-IP devices get programs that read the common packet directly (the link
// header's length is fixed per program), others the generic ones (helper loads).
// Attachment: a tcx link per device and direction (kernel 6.6 or later; the link is pinned),
// else a clsact filter (older kernels; it stays without a pin, and is found again by its
// handle). The tcx attach types are spelled out: bookworm's libbpf 1.1 and uapi headers
// predate them, and the raw BPF_LINK_CREATE passes them through.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"

extern "C" {
#include "client/kernel/bpf/native_guard_shared.h"
}

struct native_guard;  // the libbpf skeleton (generated at build time)

namespace quicstep::client::kernel {

enum class GuardAttachment { tcx, clsact };
// Which programs: the fast path for a known link-header length, or the generic one.
enum class GuardPath { ethernet, raw_ip, generic };

struct GuardOptions {
  std::string pin_dir = "/sys/fs/bpf/quicstep";
  std::vector<std::uint16_t> quic_ports{443};
  std::vector<std::string> native_prefixes;  // CIDR, IPv4 or IPv6
  bool force_clsact = false;                 // use clsact even where tcx works (tests)
  bool force_generic = false;                // the generic programs on any device (tests)
  bool write_config = true;  // false: reuse the pinned maps as they are (to read them)
};

using GuardCounters = std::array<ng_counter, NG_COUNTER_SLOTS>;

class NativeGuard {
 public:
  ~NativeGuard();
  NativeGuard(const NativeGuard&) = delete;
  NativeGuard& operator=(const NativeGuard&) = delete;

  // Loads the programs, creates (or, if pinned, reuses) the maps under options.pin_dir and
  // fills the port bitmap and prefixes. Failures: the pin directory not on a BPF filesystem
  // (or not mountable, or not creatable), the object or its programs refused (missing
  // capabilities are named), a port or prefix map not writable, a prefix not parsable.
  using Loaded = common::Result<std::unique_ptr<NativeGuard>, common::Failure>;
  static Loaded load(const GuardOptions& options);

  // Attaches both programs to `device` (in the caller's network namespace), replacing an
  // earlier attachment of ours. Failures: no such device; the link, pin, hook or filter the
  // kernel refused.
  common::Outcome attach(const std::string& device);
  // Whether both programs of this guard are still attached to `device` (true when the
  // device is gone: nothing to guard). Another tool may have detached them (`bpftool link
  // detach`, `tc filter del`): attach() again puts them back.
  bool attached(const std::string& device) const;

  // The channel device's UDP source rewrite (ng_channel_egress; the routed path with
  // stateless addressing): `source` written to ng_channel, the program attached to the
  // device's egress (pinned as link_<device>_channel). set_channel_source alone updates the
  // addresses (the tunnel's changed). channel_attached: as attached(), for that program.
  common::Outcome attach_channel(const std::string& device, const ng_channel_source& source);
  common::Outcome set_channel_source(const ng_channel_source& source);
  bool channel_attached(const std::string& device) const;

  GuardAttachment attachment() const { return attachment_; }
  // Whether load() found maps pinned by an earlier version that did not fit, and
  // replaced them (their counters and watched flows are gone).
  bool replaced_stale_maps() const { return replaced_stale_maps_; }
  GuardPath path() const { return path_; }

  // Summed over CPUs.
  GuardCounters counters() const;

  // The watchdog's flows: add (zeroed state; its local port's bit set), read, remove (the
  // bit is cleared when no other watched flow uses the port).
  common::Outcome watch(const ng_flow_key& key);
  bool watched(const ng_flow_key& key, ng_flow_state* state) const;
  void unwatch(const ng_flow_key& key);

  // Takes the programs off `devices` and removes everything pinned under pin_dir. Never
  // fails; returns how many attachments were removed.
  static int remove(const std::string& pin_dir, const std::vector<std::string>& devices);

 private:
  NativeGuard(::native_guard* skel, GuardOptions options)
      : skel_(skel), options_(std::move(options)) {}
  bool replaced_stale_maps_ = false;
  common::Outcome set_port_bit(int map_fd, std::uint16_t port, bool on);
  // One program on one hook of a device: a pinned tcx link (`pin`), else a clsact filter.
  common::Outcome attach_one(const std::string& device, int ifindex, int prog, bool egress,
                             const std::string& pin);
  // Whether one of the programs `ours` (ids) is on that hook of the device.
  bool program_attached(int ifindex, bool egress, const std::vector<std::uint32_t>& ours) const;

  ::native_guard* skel_;
  GuardOptions options_;
  GuardAttachment attachment_ = GuardAttachment::tcx;
  GuardPath path_ = GuardPath::generic;
};

// "a.b.c.d" or an IPv6 literal → the key form (IPv4 mapped). False if neither.
bool guard_address(const std::string& text, std::uint8_t out[16]);

}  // namespace quicstep::client::kernel
