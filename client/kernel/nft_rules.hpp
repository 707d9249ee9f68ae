// nft_rules: the kernel half of quicstepd, as text. Generates the one nftables table
// (`inet quicstep`) that decides in the kernel everything that needs no decision, and the
// NFQUEUE rules that queue the rest to the daemon (this kernel has no nft `queue`
// expression, CONFIG_NFT_QUEUE unset; xt NFQUEUE through nft_compat works): outbound one
// iptables-nft rule, inbound rules in the table's own chains (nft_queue_rules.hpp). Pure functions
// of a RulesetSpec: no I/O here, so the text is unit-tested (tests/unit/client).
//
// Output path (locally generated packets), in hook order:
//   -310 `out_decide` (type route: the kernel re-routes when the mark changes)
//        lo, the channel's own endpoint: untouched. Fragments, DNS, TCP, QUIC long headers,
//        UDP too short for a QUIC packet: mark CHANNEL (with observe_handshakes, long headers
//        get DECIDE_OUT instead: queued to be timed, always left on the channel). UDP short
//        headers to QUIC ports:
//        a flow in @native4/6 keeps its mark (no re-route on the bulk path: the daemon
//        decided it native) and, unless track_native, gets `notrack` (no conntrack, no NAT
//        hooks); about one packet in 256 refreshes the element's timeout. A
//        flow in @channel4/6 gets CHANNEL, anything else gets DECIDE_OUT (which policy
//        routing also sends to the channel).
//        GSO super-packets (longer than gso_threshold) get DECIDE_OUT (the kernel segments
//        them before queueing: the daemon decides segment by segment); with
//        gso_native_fast (opt-in), those of a flow already in @native4/6 are decided by their
//        first segment: a QUIC stack batches one connection's datagrams, and a client that sends
//        short headers has discarded its Initial keys (RFC 9001 4.9.1), so no later segment
//        carries a ClientHello (client/README.md, "GSO").
//   -300 iptables raw OUTPUT: mark DECIDE_OUT -> NFQUEUE --queue-bypass (no daemon: accept
//        with the mark unchanged, i.e. the channel). The daemon's verdict sets CHANNEL or
//        NATIVE; nf_reinject re-routes by the new mark.
//   -250 `out_account`: one verdict map on the mark (the native fast path misses it):
//        count per path; a daemon's NATIVE verdict gets `notrack` (unless track_native), so
//        that NAT bindings of channel packets never apply to the same 5-tuple sent natively.
//        With track_native (nat mode) that separation is conntrack zone 1 for CHANNEL and
//        DECIDE_OUT instead (native: zone 0, no NAT).
//   srcnat `post_nat` (nat mode): out the channel interface -> masquerade (tunnel address).
//   Stateless nat mode instead (no conntrack, no nat chain: conntrack's hooks are never
//   registered, so the native bulk path pays nothing for them), in a second table, `netdev
//   quicstep`, whose chains are bound to the channel device (native packets never pass
//   them; there is no `out_account` then): its egress chain counts, records local port .
//   remote port . remote addr -> local addr in @rev4/6 (and remote addr -> local addr in
//   @revany4/6, the fallback for other protocols) and sets the source to the tunnel address
//   (nft fixes the IP and L4 checksums; with udp_source_by_guard, not UDP's: the guard's
//   ng_channel_egress does, after this chain, because nft's fix breaks UDP GSO batches);
//   its ingress chain counts and rewrites the
//   destination of packets to the tunnel address back by those maps.
//   Limits: ICMP errors keep the tunnel address in their inner header (the socket does not
//   see them); two local addresses using the same local port to the same remote end share
//   one map entry (the last one wins).
// Input path: -310 `in_watch`: from the channel interface: counted (zone 1 with
//   track_native in nat mode; stateless: counted and rewritten at the device's ingress,
//   returned here); native UDP from a QUIC port: `notrack` (unless track_native),
//   and DECIDE_IN for a flow in @watch4/6, which its chain (watch_in; observe_in for the
//   channel's long headers) ends by queueing (xt NFQUEUE, bypass: inbound_queue_chains).
// Set elements are keyed in outbound orientation: client addr . client port . server addr .
// server port.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "common/flow_key.hpp"

namespace quicstep::client::kernel {

struct RulesetSpec {
  std::string table = "quicstep";              // nft table name (family inet)
  std::vector<std::uint16_t> quic_ports = {443};
  bool dns_to_channel = true;
  bool tcp_to_channel = true;
  bool other_udp_to_channel = false;
  bool other_protocols_to_channel = false;
  std::uint32_t mark_mask = 0xff;       // the bits of the mark quicstepd owns
  std::uint32_t mark_channel = 0x51;    // routed to the channel
  std::uint32_t mark_native = 0x52;     // routed natively (main table)
  std::uint32_t mark_decide_out = 0x53; // queued outbound; routed to the channel
  std::uint32_t mark_decide_in = 0x54;  // queued inbound (watchdog)
  std::uint16_t queue_outbound = 0;
  std::uint16_t queue_inbound = 1;
  std::string channel_interface = "qs-wg0";
  bool nat = true;                       // nat addressing (false: permissive)
  bool stateless = false;                // with nat: rewrite addresses without conntrack
  std::string tunnel_v4;                 // stateless: the channel interface's addresses
  std::string tunnel_v6;                 // (empty: that family's channel packets dropped)
  // stateless: the resolver each family's DNS queries entering the channel are sent to
  // (channel_dns_rules; empty: they keep the resolver they were addressed to).
  std::string channel_dns_v4;
  std::string channel_dns_v6;
  // nat, not stateless: every global address of the channel interface, the sources
  // masquerade may give; `post_nat_source` drops TCP and UDP out of the interface with any
  // other source (empty: all of that family's), counted (channel_foreign_source).
  // Masquerade would otherwise give IPv6 a native address while the interface has no IPv6
  // one, and conntrack would keep it.
  std::vector<std::string> channel_sources_v4;
  std::vector<std::string> channel_sources_v6;
  // stateless, routed (ignored otherwise): UDP's source is set by the guard's ng_channel_egress (a BPF
  // program after this table's egress chain), not here: nft's rewrite breaks UDP GSO
  // packets' checksums (native_guard.bpf.c). The reverse maps still learn UDP here.
  bool udp_source_by_guard = false;
  bool track_native = false;             // false: native packets are notrack (both ways)
  std::uint16_t ct_zone = 1;             // conntrack zone of channel packets (nat mode with
                                         // track_native; routed with forwarded_zone)
  std::vector<std::string> exempt_v4;    // the channel's endpoint addresses: never marked
  std::vector<std::string> exempt_v6;
  std::vector<std::string> native_v4;    // native_prefixes (a LAN): native except DNS
  std::vector<std::string> native_v6;
  std::uint32_t gso_threshold = 1500;    // longer UDP packets on QUIC ports are queued ...
  bool gso_native_fast = false;          // true: not those of a flow in the native set
  bool observe_handshakes = false;       // queue QUIC long headers (outbound: decided channel;
                                         // inbound on the channel: observed) for the RTT
  bool routed = false;                   // the routed native path: the netdev table, whose
                                         // chains copy QUIC to `log_group`, and the inet
                                         // table's routed flows (mark_native)
  std::uint16_t log_group = 0;
  std::uint16_t tproxy_port = 0;         // routed: the channel is a local transparent proxy
                                         // at 127.0.0.1 / ::1 (channel_kind tproxy; the
                                         // channel interface is `lo`); 0: a device
  bool switch_hold = false;              // routed, a device channel: a switching flow's short
                                         // headers wait in queue_outbound (hold_queue_chains)
  std::chrono::seconds switching_timeout{30};  // a switching-set element lives this long
  bool forwarded_zone = false;           // routed, a device channel: the channel's packets
                                         // in conntrack zone ct_zone (a forwarding host,
                                         // whose source NAT must meet a moved flow's)
  std::uint32_t set_size = 65536;        // elements per flow set (invariant 4)
  std::chrono::seconds native_timeout{120};  // a native-set element lives this long
  std::chrono::seconds watch_timeout{10};    // a watch-set element lives this long
};

// Whether a RulesetSpec is usable; the failure says why not. Checks marks (non-zero,
// distinct, within the mask), ports (1..65535, at least one, at most 64), the interface name
// (1..15 characters of [A-Za-z0-9_.-]), the table name, the exempt addresses (characters
// only).
common::Outcome check_spec(const RulesetSpec& spec);

// The `nft -f` text that atomically replaces (or creates) the table: "table; delete table;
// table { ... }" in one transaction. Precondition: check_spec(spec) succeeds.
std::string ruleset_text(const RulesetSpec& spec);

// The `nft -f` text that deletes the table, present or not (one transaction).
std::string delete_table_text(std::string_view table);

// The routed native path (spec.routed): no queue, no iptables rule: the netdev table, whose
// egress chain copies every channel datagram to a QUIC port to the log group (before the
// source rewrite: the daemon sees the flow's local address) and whose ingress chain, after
// the destination rewrite, copies the server's long headers (the handshake RTT); and the
// inet table of the flows moved native (below, "routed flows").
//
// A tproxy channel (spec.tproxy_port): no netdev table. The routing rules send channel
// packets to a route through lo (routing.hpp), so they loop back, still addressed to the
// server; the inet table's chains tell them by their destination, which is not local (`fib
// daddr type != local`): on output they are counted (channel_out) and the QUIC ones copied
// to the log group; at prerouting they are handed to the proxy client's socket (`tproxy` to
// 127.0.0.1 / [::1]:port, UDP and TCP), or dropped and counted (channel_refused) when it
// has none — never native. The proxy client's answers come back on lo from the server's
// address (not local): counted (channel_in), the server's long headers copied.
//
// The log prefixes of copies whose direction their hook does not tell (a tproxy channel's
// LAN hosts: outbound copies at prerouting, inbound ones on output).
inline constexpr const char* kLogPrefixOut = "qs-out";
inline constexpr const char* kLogPrefixIn = "qs-in";

// A device channel's `routed_out` (type route, output): before raw (-300), where zone_out
// reads its mark before conntrack.
inline constexpr int kRoutedOutPriority = -301;

// The routed path's hold at the switch (spec.switch_hold, a device channel): the chain whose
// packets go to the outbound queue (queue_outbound), "hold_queue", reached from routed_out
// by a short header of a flow in switching4/6 (server . client port . server port, as
// routed4/6; elements with a timeout, switching_timeout). The daemon adds a flow there when
// it sees its first long header on the channel, decides its short headers in the queue
// (native ones wait there until the native switch's wait is over, then leave natively, in
// order, on the route the socket gave them; channel ones get mark_channel and are routed
// again, into the channel) and deletes the element when the flow moved into routed4/6 or
// stays on the channel. Bypass: with no daemon listening they leave natively (short
// headers; the guard drops any long header). Empty unless routed with switch_hold.
std::vector<std::string> hold_queue_chains(const RulesetSpec& spec);

// The chains whose packets go to the inbound queue (queue_inbound): each ends with an xt
// NFQUEUE rule that the daemon appends over netlink after `nft -f` (nft_queue_rules.hpp).
std::vector<std::string> inbound_queue_chains(const RulesetSpec& spec);

// Stateless addressing: the channel device's ingress chain in table netdev `spec.table`, at
// whose head the daemon inserts the ICMP error rules over netlink (channel_icmp_rules.hpp).
inline constexpr const char* kChannelIngressChain = "channel_ingress";

// iptables-restore --noflush input (either family) that inserts the outbound NFQUEUE rule at
// the head of table raw's OUTPUT, tagged with kIptablesComment, atomically (it must sit in
// a base chain after out_decide's re-route: a packet queued from the route chain itself is
// not re-routed when its verdict keeps the mark). iptables_remove_text() turns an
// `iptables -t raw -S` listing into the input that deletes every tagged rule ("" when there
// is none; earlier versions' PREROUTING rule included). The legacy variant removes the user
// chains QUICSTEP_OUT/QUICSTEP_IN of earlier versions (run only when listed).
inline constexpr const char* kIptablesComment = "quicstepd";
std::string iptables_install_text(const RulesetSpec& spec);
std::string iptables_remove_text(const std::string& listing);
std::string iptables_remove_legacy_text();

// Flow sets: "native", "channel" (pinned) or "watch"; the element text of a flow in the
// set of its family, e.g. `add element inet quicstep native4 { 198.18.1.2 . 40000 .
// 198.18.10.10 . 443 timeout 120s }`. watch_port is the set of watched flows' client ports
// ("watchports", both families, no timeout: the daemon deletes what it added, WatchedPorts),
// which inbound packets meet before the watch set's lookup: `add element inet quicstep
// watchports { 40000 }`.
// The routed native path's flows ("routed4", "routed6": server address . client port .
// server port, the selector its per-flow ip rules had; no timeout, the daemon deletes what it
// added) live in `table inet T`, whose chains (a route chain on output, a filter chain at
// prerouting for forwarded ones) give a device channel's QUIC packets *outside* the sets
// mark_channel (the routing rules route QUIC natively and that mark to the channel), and a
// tproxy channel's packets *in* them mark_native (its rules send QUIC to lo by port):
// `add element inet quicstep routed4 { 198.18.10.10 . 40000 . 443 }`.
enum class FlowSet : std::uint8_t { native, channel, watch, watch_port, routed, switching };
std::string_view to_string(FlowSet s);
std::string add_element_text(std::string_view table, FlowSet set, const common::FlowKey& flow,
                             std::chrono::seconds timeout);
std::string delete_element_text(std::string_view table, FlowSet set,
                                const common::FlowKey& flow);
// "native4", "watch6", "routed4", ...: the set of `set` that holds flows of `flow`'s family
// ("watchports" for watch_port).
std::string set_name(FlowSet set, const common::FlowKey& flow);

// One change to a flow set. The daemon applies them over netlink (NftSetWriter), without
// starting a program: a set update is on the path of the flow's first native packets.
struct SetElementOp {
  bool add = true;  // false: delete
  FlowSet set = FlowSet::native;
  common::FlowKey flow;
  std::chrono::seconds timeout{0};  // add only
};
// The op as `nft -f` text (add_element_text / delete_element_text): for logs.
std::string element_op_text(std::string_view table, const SetElementOp& op);
// The element's key as the kernel stores it for `addr . inet_service . addr .
// inet_service`: each field in network byte order in its own 4-octet register slot (a port:
// 2 octets and 2 zero octets), so 16 octets for IPv4 and 40 for IPv6.
std::vector<std::uint8_t> set_element_key(const common::FlowKey& flow);
// The key of `flow`'s element in `set`: the above, or for watch_port the client port alone
// (2 octets, network byte order: the set has a single 2-octet field), or for routed the
// server address, client port and server port (each in its 4-octet slot: 12 or 24 octets).
std::vector<std::uint8_t> set_element_key(FlowSet set, const common::FlowKey& flow);

}  // namespace quicstep::client::kernel
