// CensorCore: the lab censor's decision, sans-IO. A GFW-like, per-flow censor on the
// client's ISP router: it reads what any on-path box can read (QUIC Initials decrypted with
// the public salt, the TLS SNI of a TCP ClientHello, DNS question names; common's
// HandshakeObserver) and decides per packet:
//   - QUIC ClientHello whose SNI is blocked: drop the flow, both directions, and keep the
//     (client IP, server IP, server port) triple blocked for a residual period;
//   - TLS-over-TCP ClientHello whose SNI is blocked: inject RSTs to both ends (and by
//     default drop the flow and block the triple);
//   - a UDP/53 query for a blocked name (A or AAAA): inject a forged answer, pass the query
//     (the forgery races the real answer, as the GFW's does);
//   - strict modes (the paper's §5): block every QUIC flow; block UDP flows on a QUIC port
//     whose first packet seen is a short header (a migrated flow, no Initial seen);
//   - WireGuard (off by default): a UDP flow that carries a WireGuard handshake message, on
//     any port, is dropped both ways and its triple blocked (wireguard_fingerprint.hpp).
// A blocking decision is taken with probability block_probability per flow (the GFW was
// seen to block only some connections at first); the coin comes from a seeded generator.
//
// Nothing here reads a clock or does I/O: packets and their time are passed in, the
// packets to inject and the decision records are returned. Everything is bounded: flows
// (LRU + idle expiry), residual triples, pending decision records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "common/flow_key.hpp"
#include "common/handshake_observer.hpp"
#include "common/lru_table.hpp"
#include "common/timestamp.hpp"
#include "lab/censor/blocklist.hpp"
#include "lab/censor/dns_forgery.hpp"
#include "lab/censor/packet_forge.hpp"
#include "lab/censor/residual_blocks.hpp"
#include "lab/censor/wireguard_fingerprint.hpp"

namespace quicstep::censor {

struct CensorConfig {
  // UDP ports whose flows are QUIC to the censor (SNI reading, strict modes).
  std::vector<std::uint16_t> quic_ports{443};
  // Read a QUIC ClientHello from the flow's first Initial datagram only (GFW-faithful); by
  // default the ClientHello is reassembled across datagrams, as modern DPI does.
  bool first_datagram_only = false;
  // Probability that a flow matching the blocklist is blocked (1: always).
  double block_probability = 1.0;
  // How long a blocked triple stays blocked; 0 disables residual blocking.
  common::Duration residual_period = std::chrono::seconds(180);
  std::size_t max_residual = 65536;
  // TCP: after the RSTs, also drop the flow and block its triple (else only inject).
  bool tcp_drop = true;
  // DNS: forge answers to UDP/53 queries for blocked names.
  bool dns_forge = true;
  ForgedAddresses forged;
  // Strict modes (§5 of the paper).
  bool block_all_quic = false;
  bool block_short_header_first = false;
  // Block WireGuard by its handshake's fingerprint (any UDP port), as censors that block
  // the protocol do.
  bool block_wireguard = false;
  // Flow table bounds (the censor's and the observer's).
  std::size_t max_flows = 65536;
  common::Duration flow_idle_timeout = std::chrono::seconds(120);
  // Decision records kept until take_decisions(); older ones are dropped and counted.
  std::size_t max_pending_decisions = 4096;
};

enum class Action : std::uint8_t {
  pass,             // forward unchanged
  drop,             // discard
  drop_and_inject,  // discard, and send Verdict::inject
  pass_and_inject,  // forward, and send Verdict::inject (a forged DNS answer racing)
};
std::string_view to_string(Action action);

// Why a flow was decided.
enum class Rule : std::uint8_t {
  none,
  quic_sni,             // a blocked SNI in a QUIC Initial
  tcp_sni,              // a blocked SNI in a TLS-over-TCP ClientHello
  dns_name,             // a blocked name in a UDP/53 query
  residual,             // the triple was blocked earlier
  strict_all_quic,      // strict mode: any QUIC flow
  strict_short_header,  // strict mode: first packet seen is a short header
  wireguard,            // a WireGuard handshake message (block_wireguard)
  spared,               // matched the blocklist, but the probability coin said no
};
std::string_view to_string(Rule rule);

struct Verdict {
  Action action = Action::pass;
  Rule rule = Rule::none;
  std::vector<Packet> inject;  // empty unless action is *_and_inject
};

// One line of the decision log: when a flow (or a DNS query) was decided.
struct DecisionRecord {
  common::Timestamp time;
  common::FlowKey flow;
  Rule rule = Rule::none;
  Action action = Action::pass;
  std::string name;      // SNI or DNS question name ("" for residual and strict rules)
  std::string matched;   // the blocklist rule that matched
};

struct CensorCounters {
  std::uint64_t packets = 0;
  std::uint64_t passed = 0;
  std::uint64_t dropped = 0;
  std::uint64_t injected = 0;           // packets handed out to inject
  std::uint64_t unparsed = 0;           // not IPv4/IPv6 that parses: passed
  std::uint64_t client_hellos = 0;      // SNIs read (QUIC and TCP)
  std::uint64_t quic_sni_blocks = 0;    // flows blocked, per rule
  std::uint64_t tcp_sni_blocks = 0;
  std::uint64_t dns_forged = 0;
  std::uint64_t residual_blocks = 0;
  std::uint64_t strict_blocks = 0;
  std::uint64_t wireguard_blocks = 0;   // flows blocked by WireGuard's fingerprint
  std::uint64_t spared = 0;             // matched but let through by the probability coin
  std::uint64_t flows_evicted = 0;
  std::uint64_t decisions_lost = 0;     // records dropped: take_decisions() not called
};

class CensorCore {
 public:
  CensorCore(CensorConfig config, Blocklist blocklist, std::uint64_t rng_seed);

  // Decides one IP packet (IPv4 or IPv6, from its first header byte) crossing the router
  // at `now`, in either direction. Never fails: what does not parse is passed (counted in
  // unparsed), as a censor that fails open.
  Verdict decide(common::Bytes ip_packet, common::Timestamp now);

  // Forgets idle flows and ended residual blocks (decide() also does, lazily).
  void on_expiry(common::Timestamp now);

  // The decision records since the last call, oldest first.
  std::vector<DecisionRecord> take_decisions();

  const CensorCounters& counters() const { return counters_; }
  const common::HandshakeObserverCounters& observer_counters() const { return observer_.counters(); }
  std::size_t flow_count() const { return flows_.size(); }
  std::size_t residual_count() const { return residual_.size(); }
  const CensorConfig& config() const { return config_; }

 private:
  struct FlowState {
    common::Timestamp last_seen;
    bool decided = false;  // blocked, spared, or its ClientHello seen
    bool blocked = false;
  };
  struct FlowHash {
    std::uint64_t operator()(const common::FlowKey& k) const noexcept { return common::FlowKeyHash{}(k); }
  };
  using Flows = common::LruTable<common::FlowKey, FlowState, FlowHash>;

  Verdict decide_dns(const common::Observation& seen, common::Timestamp now);
  Verdict decide_new_flow(const common::Observation& seen, const common::FlowKey& key,
                          FlowState& flow, common::Timestamp now);
  Verdict decide_hello(const common::Observation& seen, const common::FlowKey& key,
                       FlowState& flow, common::Timestamp now);
  Verdict block(FlowState& flow, const common::FlowKey& key, Rule rule, common::Timestamp now);
  Verdict block_wireguard(FlowState& flow, const common::FlowKey& key, common::Timestamp now);
  bool is_quic_port(std::uint16_t port) const;
  bool coin();
  Verdict finish(Verdict verdict);
  void record(common::Timestamp now, const common::FlowKey& flow, Rule rule, Action action,
              std::string name = {}, std::string matched = {});

  CensorConfig config_;
  Blocklist blocklist_;
  common::HandshakeObserver observer_;
  Flows flows_;
  ResidualBlocks residual_;
  std::mt19937_64 rng_;
  std::deque<DecisionRecord> decisions_;
  CensorCounters counters_;
};

}  // namespace quicstep::censor
