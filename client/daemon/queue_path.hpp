// QueuePath: the native path through the netfilter queues (native_path = "queue", and
// "auto" where the routed path cannot be taken). The kernel half (nft_rules.hpp) decides
// what it can from flow sets and queues the rest: outbound short headers of flows it does not
// know go to the outbound queue, where the classifier decides each (native: the native mark;
// else the pre-set channel mark stays); answers of watched flows go to the inbound queue,
// only observed (they confirm a migration). The sets follow the classifier's events (a flow
// moved native, confirmed, failed back, forgotten), one transaction per burst. A dead daemon
// leaves the queues without a listener: queue bypass keeps the channel mark (invariant 1).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/daemon/native_path.hpp"
#include "client/kernel/nft_set_writer.hpp"
#include "client/kernel/watched_ports.hpp"
#include "common/flow_key.hpp"
#include "net/nfqueue_frontend.hpp"

namespace quicstep::client::daemon {

class QueuePath final : public NativePath {
 public:
  explicit QueuePath(NativePathContext context) : ctx_(context) {}

  const char* name() const override { return "queue"; }
  // Routing first (the table exists before any packet is marked), then the queues (so that
  // marked packets find a listener), then the nft table with its queue rules, then the
  // flow-set writer. Errors: "ip rule: ...", the queue's, "rules: ...", "flow sets: ...".
  common::Outcome start() override;
  void stop() override {}

  std::vector<EventSource> sources() override;
  // The deferred verdicts of the native switch (NfqueueFrontend::next_release).
  common::Timestamp next_timer() const override { return queue_out_.next_release(); }
  void on_timer(common::Timestamp now) override { queue_out_.release_due(now); }

  void on_event(const core::FlowEvent& event, common::Timestamp now) override;
  // Applies the burst's flow-set changes in one transaction (counted in the status).
  void after_events() override;

  void on_devices_checked() override {}
  // Sockets take their source from the main table themselves; the channel masquerades. The
  // daemon follows the source for the channel's WireGuard (Daemon::Impl::heal_now).
  void follow_network(const NativeSources&) override {}
  void on_table_replaced() override;
  void on_channel_recreated() override {}
  // nft writes every channel packet's source itself.
  void before_channel_addresses(const kernel::RulesetSpec&) override {}
  void on_classifier_reset() override;
  bool reload_needs_restart(const kernel::RoutingSpec&,
                            const kernel::RoutingSpec&) const override {
    return false;
  }

  void on_rules_restored() override {}
  std::vector<ChannelRoute> channel_routes() const override { return {}; }
  common::Outcome restore_channel_routes() override { return {}; }
  std::vector<OwnedPiece> owned_pieces() override { return {}; }
  // Without the table nothing is marked and every packet would take the main table: the
  // routed path's catch-all rules (DNS, TCP, QUIC to a table without routes, then
  // `unreachable`), behind the channel's mark rules, until the table is back.
  void table_missing_fail_closed() override;
  void table_back() override;

  void add_status(StatusSnapshot& snapshot) const override;
  void add_status_json(nlohmann::json&) const override {}

 private:
  net::PacketVerdict decide_out(const net::QueuedPacket& p);
  core::Direction inbound_direction(const net::QueuedPacket& p) const;
  // `flow` is no longer watched: delete its port from the kernel's set if no other uses it.
  void unwatch_port(const common::FlowKey& flow);

  NativePathContext ctx_;
  net::NfqueueFrontend queue_out_, queue_in_;
  // Native-set elements added recently, so that each flow costs one set update per second
  // at most. Bounded: cleared when full.
  std::unordered_map<common::FlowKey, common::Timestamp, common::FlowKeyHash> recent_native_;
  // The client ports in the kernel's watchports set (the watch set's gate).
  kernel::WatchedPorts watched_ports_;
  // Set changes of one burst, applied together after its verdicts.
  std::vector<kernel::SetElementOp> element_ops_;
  kernel::NftSetWriter set_writer_;
  std::uint64_t set_updates_ = 0, set_update_failures_ = 0;
  // Stateless addressing has no after-queue chain to count the daemon's native verdicts:
  // counted here and added to the kernel's native_out.
  kernel::KernelCounter native_verdicts_;
  bool locked_down_ = false;  // table_missing_fail_closed() in force
};

}  // namespace quicstep::client::daemon
