// NativePath: how QUIC data leaves on the native path, one of two backends that the daemon
// chooses once, at start (Daemon::Impl::start_native_path, the only place that knows both):
//   QueuePath   (queue_path.hpp)   the netfilter queues: the daemon decides every short
//               header the kernel's flow sets do not, marks it native or leaves its channel
//               mark, and keeps those sets in step with the classifier;
//   RoutedPath  (routed_path.hpp)  policy routing: the daemon decides from copies of the
//               channel's packets (nflog) and gives each flow it moves native a rule of its
//               own; the native guard polices the native devices.
// Both program the same kernel half around the channel: policy routing (RoutingSpec) and the
// nft table (RulesetSpec), which the daemon owns and re-installs (reloads, a re-created
// channel device); each path installs them in the order its own invariant needs and tells
// the daemon what to wait on, what its timers are, and what its status adds. The daemon runs
// one loop for both: a readable source, then the classifier's events (on_event), then the
// timer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/core/classifier.hpp"
#include "client/core/policy_config.hpp"
#include "client/kernel/healer.hpp"
#include "client/daemon/status.hpp"
#include "client/kernel/kernel_rules.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/routing.hpp"
#include "common/error.hpp"
#include "common/ip_packet.hpp"
#include "common/timestamp.hpp"

namespace quicstep::client::daemon {

// Self-healing's pieces (client/core/reconciler.hpp, client/kernel/healer.hpp; quicstep-tun
// heals its own with them too).
using core::Piece;
using core::PieceState;
using kernel::Healer;
using kernel::OwnedPiece;

// What the daemon shares with its native path. References into the daemon, which outlives
// the path; the classifier and the config may be replaced by a reload (read them through
// these references each time, never keep a pointer).
struct NativePathContext {
  const core::Config& config;
  kernel::RulesetSpec& spec;
  kernel::RoutingSpec& routing_spec;
  kernel::InstalledRouting& routing;
  kernel::InstalledRules& rules;
  std::unique_ptr<core::Classifier>& classifier;
  const unsigned& channel_ifindex;  // the channel device's index (0: gone)
};

// A descriptor the daemon waits on, and what reads it. After on_readable() the daemon drains
// the classifier's events.
struct EventSource {
  int fd = -1;  // owned by the path; the daemon waits on a dup of it
  std::function<void()> on_readable;
};

// The source address a new native socket gets, per family ("": none; nullopt: not known,
// the read failed).
struct NativeSources {
  std::optional<std::string> v4, v6;
};

// A default route through the channel device in a routing table (self-healing: the kernel
// removes it when the device goes down).
struct ChannelRoute {
  common::IpFamily family = common::IpFamily::v4;
  std::uint32_t table = 0;
};

class NativePath {
 public:
  virtual ~NativePath() = default;

  // "queue" or "routed" (status: native_path).
  virtual const char* name() const = 0;

  // Installs the path: the shared routing and rules (through the context) and its own
  // listeners. On failure the caller removes the rules and routing and calls stop(), and
  // nothing of it stays.
  virtual common::Outcome start() = 0;
  // Removes what the path installed beyond the shared rules and routing, which the daemon
  // removes itself (the routed path: the guard and its pins). At exit, after a failed
  // start(), and before the "auto" fallback.
  virtual void stop() = 0;

  // The descriptors to wait on. Precondition: start() succeeded.
  virtual std::vector<EventSource> sources() = 0;
  // When on_timer() has work next (Timestamp::never(): none), and that work; the daemon
  // calls it before the classifier's own on_expiry().
  virtual common::Timestamp next_timer() const = 0;
  virtual void on_timer(common::Timestamp now) = 0;

  // One of the classifier's events, in the daemon's one drain loop; after_events() ends the
  // drain (a burst's kernel changes go together).
  virtual void on_event(const core::FlowEvent& event, common::Timestamp now) = 0;
  virtual void after_events() = 0;

  // The network devices were checked (the kernel announced a change, or every 2 s).
  virtual void on_devices_checked() = 0;
  // The network may have changed (an address, a default route, a second uplink: every heal
  // check and every announcement of one): the path follows the native source address the
  // daemon read (KernelProbe::native_source) before the heal check (routed: the channel
  // route's source).
  virtual void follow_network(const NativeSources& sources) = 0;
  // The channel's tunnel addresses (or its device) are about to change to next's: called
  // before the rules that carry them are installed, with `next` as they will be (routed: the
  // guard's UDP source rewrite takes the new addresses first).
  virtual void before_channel_addresses(const kernel::RulesetSpec& next) = 0;
  // The nft table was installed anew (reload, re-created channel): its sets start empty.
  virtual void on_table_replaced() = 0;
  // The channel device was re-created and the table installed on it again.
  virtual void on_channel_recreated() = 0;
  // A reload replaced the classifier: the flows it knew are gone.
  virtual void on_classifier_reset() = 0;
  // Whether reloading from `now` to `next` routing needs a restart of this path.
  virtual bool reload_needs_restart(const kernel::RoutingSpec& now,
                                    const kernel::RoutingSpec& next) const = 0;

  // Self-healing (healer.hpp). The daemon put back the routing rules another tool removed;
  // the path adds again its own rules that went with them (routed: the flow rules).
  virtual void on_rules_restored() = 0;
  // The routes through the channel that the path installed, and their restore (after the
  // channel device went down and came back). Failure: the failing command.
  virtual std::vector<ChannelRoute> channel_routes() const = 0;
  virtual common::Outcome restore_channel_routes() = 0;
  // The pieces of kernel state the path owns beyond the shared table, rules and channel
  // routes (routed: the guard on every native device).
  virtual std::vector<OwnedPiece> owned_pieces() = 0;
  // While the nft table is missing and not restored (another tool keeps removing it, or the
  // restore fails): what keeps the path failed closed, and its undoing once the table is
  // back. (routed: nothing needed, the rules and the guard do not depend on it.)
  virtual void table_missing_fail_closed() = 0;
  virtual void table_back() = 0;

  // What the path adds to the status: counters and queue figures in the snapshot (before
  // status_json), and its own section of the JSON (after).
  virtual void add_status(StatusSnapshot& snapshot) const = 0;
  virtual void add_status_json(nlohmann::json& status) const = 0;
};

}  // namespace quicstep::client::daemon
