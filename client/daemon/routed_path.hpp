// RoutedPath: the daemon's half of the routed native path (native_path = "routed",
// client/README.md). Policy routing sends DNS, TCP and QUIC to the channel (routing.hpp);
// the classifier decides from copies of the channel's packets (nflog_observer.hpp); a flow it
// moves native becomes an element of the routed nft sets here (`SERVER . P . Q` in
// routed4/6, whose chains mark its packets for the one `fwmark ... lookup main` rule) at
// the end of its native switch, so its packets keep the channel until then and arrive in
// order. (Called the flow's "rule" below and in the status: it selects what the per-flow ip
// rules of earlier versions did.) Native packets never reach the daemon: the guard (native_guard.hpp) on
// every native device drops what must not leave there, counts the rest, and counts a watched
// flow's packets and answers, which the migration watchdog reads here (on_timer()).
//
// The table and its elements outlive a killed daemon (it leaves its native flows native and
// everything else on the channel, as the queue path's native set does); the next start
// replaces the table (the flows pass the channel once more and move again). A flow loses its rule when the
// socket that could carry it closes (udp_socket_watch.hpp: the kernel announces it), when it
// fails back, or when the classifier forgets it (idle: the classifier sees none of a native
// flow's packets) and no UDP socket could carry it any more; a forgotten flow whose socket
// lives keeps its rule until that socket closes (checked again every idle timeout as well).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "client/core/classifier.hpp"
#include "client/daemon/native_path.hpp"
#include "client/kernel/fib_rule_writer.hpp"
#include "client/kernel/kernel_probe.hpp"
#include "client/kernel/lift_datagrams.hpp"
#include "client/kernel/native_guard.hpp"
#include "client/kernel/nft_set_writer.hpp"
#include "client/kernel/nflog_observer.hpp"
#include "client/kernel/udp_socket_watch.hpp"
#include "common/flow_key.hpp"
#include "net/nfqueue_frontend.hpp"

namespace quicstep::client::daemon {

struct RoutedPathOptions {
  std::uint32_t flow_priority = 10120;  // RoutingSpec::flow_priority()
  std::string channel_interface;
  kernel::GuardOptions guard;
  // How often watched flows are read while the watchdog waits on any.
  common::Duration watch_poll = std::chrono::milliseconds(20);
  // A forgotten flow's rule: how long before its socket is checked again.
  common::Duration orphan_check = std::chrono::seconds(120);
};

struct RoutedPathStats {
  std::uint64_t rules_added = 0;
  std::uint64_t rule_failures = 0;   // adds or deletes the kernel refused
  std::uint64_t rules_deleted = 0;
  std::uint64_t watch_failures = 0;  // the guard's watch map refused a flow
  std::uint64_t orphans_kept = 0;    // forgotten flows whose socket was still there
  std::uint64_t sockets_closed = 0;  // flows ended because their socket closed
  std::uint64_t socket_lookup_failures = 0;  // a flow's sockets could not be looked up
  std::uint64_t devices_guarded = 0;
  std::uint64_t guard_failures = 0;  // a device the guard could not attach to
  std::uint64_t guard_restored = 0;  // re-attached after another tool detached it
  std::uint64_t channel_source_restored = 0;  // ng_channel_egress attached again
  std::uint64_t channel_source_failures = 0;  // ... or it could not be
  std::uint64_t rules_restored = 0;  // flow elements added again after the table was replaced
  std::uint64_t source_changes = 0;  // the native source address followed (per family)
  std::uint64_t lift_datagrams = 0;  // sent for moved flows (kernel/lift_datagrams.hpp)
  std::uint64_t source_failures = 0;  // a channel route the kernel refused for a new source
  std::uint64_t switching_added = 0;     // flows whose short headers wait for their switch
  std::uint64_t switching_failures = 0;  // switching-set changes the kernel refused
  std::uint64_t held_to_channel = 0;     // held short headers sent on into the channel
};

class RoutedPath final : public NativePath {
 public:
  explicit RoutedPath(NativePathContext context) : ctx_(context) {}

  const char* name() const override { return "routed"; }
  // The guard on every native device first (nothing may leave there unguarded once rules
  // send flows there), then the routing rules (DNS, TCP and QUIC to the channel; the flow
  // rules come later), then the log group's listener, then the netdev table whose chains
  // copy the channel's QUIC packets to it. Errors: no default route to take the native
  // source address from, "native guard: ...", the rule socket's or the socket watch's,
  // "ip rule: ...", the log group's, "rules: ...".
  common::Outcome start() override;
  // Detaches and unpins the guard (remove_guard).
  void stop() override;

  // The log group (copies of the channel's packets), the socket watch (closed sockets) and,
  // with the hold at the switch, its queue.
  std::vector<EventSource> sources() override;
  // Held packets that are due (first: they leave before the flow's element makes its later
  // ones bypass the queue), due rules, the watched flows' counts (every watch_poll while the
  // watchdog waits on any) and the forgotten flows' sockets.
  common::Timestamp next_timer() const override;
  void on_timer(common::Timestamp now) override;

  // Keeps the kernel in step with a classifier event.
  void on_event(const core::FlowEvent& event, common::Timestamp now) override;
  void after_events() override {}

  // Attaches the guard to devices that appeared since.
  void on_devices_checked() override;
  // A new native source address (DHCP, another network, a second uplink of lower metric):
  // the routed table's channel route takes it (`ip route replace ... src NEW`), so that the
  // channel's packets and the sockets connected from now on carry the address the native
  // path has; a family whose default route went loses its channel route (its channel
  // packets then meet `unreachable`). Counted (source_changes) and logged.
  void follow_network(const NativeSources& sources) override;
  // New tunnel addresses, or a new channel device, with rules that leave UDP's source to the
  // guard: the guard rewrites to the new addresses, and is attached to the new device,
  // before those rules are installed (a family that loses its address keeps the old one
  // until on_table_replaced; the new rules drop that family).
  void before_channel_addresses(const kernel::RulesetSpec& next) override;
  // The table was installed afresh: its sets are empty, every flow's element again.
  void on_table_replaced() override;
  // The routed channel table's route went with the old device: the same route again.
  void on_channel_recreated() override;
  void on_classifier_reset() override {}
  // The flows' one fwmark rule is among the routing's rules: nothing of the path's.
  void on_rules_restored() override {}
  // The routed table's default route per family with a native source address.
  std::vector<ChannelRoute> channel_routes() const override;
  common::Outcome restore_channel_routes() override;
  // The guard: attached on every device it was attached to (still there), or attached again.
  std::vector<OwnedPiece> owned_pieces() override;
  // Without the table, DNS and TCP still meet the rules (channel or `unreachable`; channel
  // packets keep the native source and the provider drops them), and a device channel's QUIC
  // is routed natively, unmarked, where the guard drops every long header (invariant 1).
  // While the table stays missing (its restores back off, or fail), the guard alone would
  // stand between a handshake and the native path, and another tool may have taken it too
  // (a flush and a detach together: long headers left natively for seconds in the lab). So a
  // device channel's own QUIC is then sent to the channel table by port, then `unreachable`
  // (lock_rules), ahead of its rule to main: fail closed whatever happens to the guard.
  // Removed when the table is back.
  void table_missing_fail_closed() override;
  void table_back() override;
  // The rules table_missing_fail_closed adds (none for a tproxy channel, whose QUIC is
  // selected by port anyway).
  std::vector<kernel::FibRule> lock_rules() const;
  // Its ports, DNS/TCP policy, native prefixes and table are in the routing rules.
  bool reload_needs_restart(const kernel::RoutingSpec& now,
                            const kernel::RoutingSpec& next) const override;

  // The guard counts the native path (native_out, native_in), the hold's queue is the
  // outbound queue; "routed": rules, watches, the guard's devices and drops, the copies seen
  // and lost, the switching flows.
  void add_status(StatusSnapshot& snapshot) const override;
  void add_status_json(nlohmann::json& status) const override;

  // Everything the guard of `pin_dir` and the devices of this namespace carry (at exit and by
  // --cleanup; the rules go with the routing's priorities).
  // Returns how many attachments it took off.
  static int remove_guard(const std::string& pin_dir);

 private:
  // The channel's UDP source rewrite (ng_channel_egress): what it should hold, and making
  // it so (attached to the channel device, with the current tunnel addresses).
  ng_channel_source channel_source(const kernel::RulesetSpec& spec) const;
  common::Outcome sync_channel_source(const kernel::RulesetSpec& spec);
  common::Outcome sync_channel_source() { return sync_channel_source(ctx_.spec); }
  // A copy the log group delivered: the server's handshake (ingress), or an outbound packet
  // the classifier decides (a flow it moves native is scheduled).
  void observe(const kernel::ObservedPacket& p);
  // The classifier decided a packet of `flow` (seen on the channel) native: its rule goes in
  // at `due` (at once if zero or past), watched if the watchdog waits on the flow.
  void schedule(const common::FlowKey& flow, common::Timestamp due, bool watch,
                common::Timestamp now);
  // A packet of `key` (its UDP payload: `quic`) was decided native: the flow is scheduled
  // (watched while native_pending), and its first short header kept for lift datagrams.
  void moved_native(const common::FlowKey& key, common::Bytes quic, common::Timestamp due,
                    common::Timestamp now);
  // The hold at the switch (ctx_.spec.switch_hold, kernel/nft_rules.hpp hold_queue_chains).
  // A flow's first long header seen on the channel: its short headers will come to the
  // queue (switching4/6) until it moves or stays on the channel. Not for a destination
  // known not to migrate.
  void begin_switching(const common::FlowKey& flow, common::Timestamp now);
  // A short header of a switching flow, queued: decided as the queue path decides. Native:
  // the flow is scheduled and the packet waits for the switch (not_before), then leaves on
  // its own route (native); channel: mark_channel (routed again, into the channel), and the
  // flow leaves the switching set (its next packets take the channel directly).
  net::PacketVerdict decide_held(const net::QueuedPacket& p);
  // Reads the closed sockets. The flows the classifier tracks that no socket can carry any
  // more are returned, for Classifier::forget() (whose `forgotten` event, on_event(), then
  // deletes the rule); flows it forgot already lose their rule here.
  std::vector<common::FlowKey> drain_closed_sockets();
  std::size_t flows_with_rule() const;
  std::size_t flows_watched() const;
  // Loads the guard, opens the rule socket and the socket watch, attaches the guard to every
  // native device.
  common::Outcome open_guard(const RoutedPathOptions& options);

  struct Flow {
    bool scheduled = false;  // moved native by the classifier (schedule())
    bool switching = false;  // in the switching set (its short headers are queued)
    bool rule = false;      // added to the kernel
    bool watch = false;     // the watchdog reads it (native_pending)
    bool watching = false;  // in the guard's watch map
    bool orphan = false;    // forgotten by the classifier, rule kept while its socket lives
    bool restoring = false;  // its element went with a replaced table: added again
    common::Timestamp due;  // rule not yet added: when
    std::uint64_t sent_seen = 0;
    // The start of the client's short header that moved it (lift datagrams copy it); sent
    // once, at its first native packet.
    std::array<std::uint8_t, kernel::kLiftHeaderBytes> lift_header{};
    std::uint8_t lift_header_len = 0;
    bool lifted = false;
    // When a watch poll first saw the flow's native packets (lift datagrams wait
    // native_switch.lift_delay from there).
    common::Timestamp first_native_seen = common::Timestamp::never();
    // A LAN host's flow (forwarded, its client address not the native source): the key
    // under which the guard sees it after the host's masquerade (native source, same
    // ports), watched beside its own. Masquerade keeps the port unless it is taken.
    std::optional<ng_flow_key> masqueraded;
  };
  // The masqueraded key of a forwarded flow (Flow::masqueraded), or none.
  std::optional<ng_flow_key> masqueraded_key(const common::FlowKey& key) const;
  // The flow's element or socket check is due at `at` (the heap of due_ holds it).
  void set_due(const common::FlowKey& key, Flow& f, common::Timestamp at);
  void add_rule(const common::FlowKey& key, Flow& f);
  // The watchdog's entry in the guard (f.watch): before the flow's first native packet.
  void watch_flow(const common::FlowKey& key, Flow& f);
  // Deletes the flow's switching element (f.switching).
  void end_switching(const common::FlowKey& key, Flow& f);
  void drop(const common::FlowKey& key, Flow& f);
  void unwatch(const common::FlowKey& key, Flow& f);
  // Whether a UDP socket of this namespace could carry `flow` (true if that is not known).
  bool has_socket(const common::FlowKey& flow);

  NativePathContext ctx_;
  RoutedPathOptions options_;
  kernel::NflogObserver observer_;
  net::NfqueueFrontend hold_;  // the hold at the switch (open if the spec has it)
  kernel::NftSetWriter set_writer_;  // the flows' elements (routed4/6)
  bool channel_ethernet_ = false;  // the channel device is Ethernet-framed (link_header.hpp)
  ng_channel_source channel_source_{};  // what ng_channel holds (sync_channel_source)
  bool channel_source_attached_ = false;  // ng_channel_egress was attached once
  kernel::UdpSocketWatch sockets_;
  kernel::KernelProbe source_probe_;  // the native source address at start
  std::unique_ptr<kernel::NativeGuard> guard_;
  kernel::LiftSender lift_;
  std::set<std::string> guarded_;
  std::unordered_map<common::FlowKey, Flow, common::FlowKeyHash> flows_;
  struct Due {
    common::Timestamp at;
    common::FlowKey flow;
  };
  struct LaterFirst {
    bool operator()(const Due& a, const Due& b) const { return b.at < a.at; }
  };
  // What comes due (elements to add, orphans' socket checks), earliest first; entries whose
  // flow went or was given another time since are skipped when they surface.
  std::priority_queue<Due, std::vector<Due>, LaterFirst> due_;
  std::unordered_set<common::FlowKey, common::FlowKeyHash> watching_;  // in the guard's map
  // flows_ by client port: a closed socket is matched against the flows on its port only.
  std::unordered_multimap<std::uint16_t, common::FlowKey> flows_by_port_;
  RoutedPathStats stats_;
  common::Timestamp last_tick_;
  bool locked_down_ = false;  // table_missing_fail_closed() in force
};

// The guard's key of a flow (outbound orientation: client = local).
ng_flow_key guard_key(const common::FlowKey& flow);

}  // namespace quicstep::client::daemon
