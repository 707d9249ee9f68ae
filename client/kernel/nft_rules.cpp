#include "client/kernel/nft_rules.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

namespace quicstep::client::kernel {
namespace {

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// "meta mark set meta mark & ~mask | value": keeps the bits other software owns.
std::string set_mark(const RulesetSpec& s, std::uint32_t value) {
  return "meta mark set meta mark & " + hex(~s.mark_mask) + " | " + hex(value);
}

// One port: a plain compare (a one-element anonymous set would be a set lookup).
std::string port_set(const std::vector<std::uint16_t>& ports) {
  if (ports.size() == 1) return std::to_string(ports[0]);
  std::string out = "{ ";
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(ports[i]);
  }
  return out + " }";
}

std::string addr_set(const std::vector<std::string>& addrs) {
  std::string out = "{ ";
  for (std::size_t i = 0; i < addrs.size(); ++i) out += (i ? ", " : "") + addrs[i];
  return out + " }";
}

bool valid_name(std::string_view name, std::size_t max) {
  if (name.empty() || name.size() > max) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
  });
}

bool valid_address_text(std::string_view a) {
  return !a.empty() && a.size() <= 64 && std::all_of(a.begin(), a.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
           c == '.' || c == ':' || c == '/';
  });
}

bool stateless_nat(const RulesetSpec& s) { return s.nat && s.stateless; }

// Stateless nat: the reverse maps, keyed in outbound orientation (local port . remote port .
// remote addr; ports first: nft 1.0.6 cannot generate an ipv6-first concatenation with an
// ipv6 value). Their timeout is the flow sets' (an idle channel flow is forgotten as such).
void reverse_maps(std::ostringstream& o, const RulesetSpec& s) {
  for (const char* fam : {"4", "6"}) {
    const char* addr = fam[0] == '4' ? "ipv4_addr" : "ipv6_addr";
    o << "  map rev" << fam << " {\n    type inet_service . inet_service . " << addr << " : "
      << addr << "\n    flags dynamic,timeout\n    timeout " << s.native_timeout.count()
      << "s\n    size " << s.set_size << "\n  }\n";
    o << "  map revany" << fam << " {\n    type " << addr << " : " << addr
      << "\n    flags dynamic,timeout\n    timeout " << s.native_timeout.count() << "s\n    size "
      << s.set_size << "\n  }\n";
  }
}

// The channel device's egress rewrite: the source becomes the tunnel address, the reverse
// maps learn the local address. A family without a tunnel address is dropped (as
// masquerade would).
void rewrite_source(std::ostringstream& o, const RulesetSpec& s) {
  for (const auto& [fam, ip, tunnel] :
       {std::tuple{"4", "ip", &s.tunnel_v4}, std::tuple{"6", "ip6", &s.tunnel_v6}}) {
    if (tunnel->empty()) {
      o << "    meta protocol " << ip << " drop\n";
      continue;
    }
    const std::string differs = std::string("    ") + ip + " saddr != " + *tunnel;
    o << differs << " meta l4proto { tcp, udp } update @rev" << fam << " { th sport . th dport . "
      << ip << " daddr : " << ip << " saddr }\n"
      << differs << " update @revany" << fam << " { " << ip << " daddr : " << ip << " saddr }";
    if (s.routed && s.udp_source_by_guard) {
      // UDP's source is set after this chain, by the guard (nft_rules.hpp).
      o << "\n" << differs << " meta l4proto != udp";
    }
    o << " " << ip << " saddr set " << *tunnel << "\n";
  }
}

void flow_sets(std::ostringstream& o, const RulesetSpec& s) {
  const struct {
    const char* name;
    std::chrono::seconds timeout;
  } sets[] = {{"native", s.native_timeout}, {"channel", s.native_timeout},
              {"watch", s.watch_timeout}};
  for (const auto& set : sets) {
    for (const char* fam : {"4", "6"}) {
      const char* addr = fam[0] == '4' ? "ipv4_addr" : "ipv6_addr";
      o << "  set " << set.name << fam << " {\n    type " << addr << " . inet_service . "
        << addr << " . inet_service\n    flags dynamic,timeout\n    timeout " << set.timeout.count()
        << "s\n    size " << s.set_size << "\n  }\n";
    }
  }
  // The watched flows' client ports: a 2-octet key without flags is a bitmap (one bit test
  // per lookup), where the 4-tuple sets hash (~130 ns on this VM, bench_rule_cost.py
  // --inbound). Every inbound native packet meets it; only a watched port's go on to the
  // watch set.
  o << "  set watchports {\n    type inet_service\n  }\n";
}

constexpr const char* kFlow4 = "ip saddr . udp sport . ip daddr . udp dport";
constexpr const char* kFlow6 = "ip6 saddr . udp sport . ip6 daddr . udp dport";
// The UDP payload's byte 21 (see out_decide_chain): zero in ~1 packet of 256, which then
// refreshes its native-set element in quic_out. Each such packet costs ~300 ns more than the
// bulk rule (quic_out's calls and the set update): with one packet in 8 (three bits, an
// earlier version) that was ~40 ns on every native packet (bench_rule_cost.py, whose
// datagrams vary this byte as ciphertext does); with one in 256, ~1 ns. The price: a flow
// with fewer than a few hundred packets per element timeout may see its element expire; its
// next packet then passes the queue once and the daemon re-adds it.
constexpr const char* kSampleBits = "@th,224,32 & 0xff0000";

void out_decide_chain(std::ostringstream& o, const RulesetSpec& s) {
  o << "  chain out_decide {\n"
       "    type route hook output priority -310; policy accept;\n";
  // The bulk path first, in one rule per family: a decided flow's short headers (long
  // enough to be QUIC, not one of the ~1 in 256 packets that refresh the element in
  // quic_out). Everything this rule checks, the rules below check again for the rest; lo
  // and the exempt endpoint never reach the native set (they are never queued), so
  // checking them first would only cost the bulk path. GSO super-packets too unless
  // !gso_native_fast (then they go the long way, to the queue).
  //
  // Every expression here costs every native packet, and the kind matters more than the
  // count (bench_rule_cost.py, on a VM with retpolines): nft_do_chain evaluates an
  // equality compare of up to 4 bytes, a 4-byte mask, and a 1, 2 or 4-byte aligned payload
  // load inline (a few ns each); a range compare or a 1-byte mask it calls (replacing the
  // two ranges and the 1-byte mask of an earlier version with the checks below saved ~65
  // ns). So the rule checks only what the set does not imply, with inline expressions but
  // for the length bound, the set lookup and the meta loads:
  // - UDP (the set's key has no protocol: a TCP segment with a native flow's ports would
  //   match). The QUIC port is implied: only the classifier fills the set, with QUIC flows.
  // - Not a fragment is implied too: the transport-header loads (first byte, ports) fail
  //   for a non-first fragment (nft_payload refuses them), and a first fragment carries the
  //   datagram's own first byte. Locally sent datagrams are fragmented after this hook.
  //   (quicstepd_lab test_10b sends a native flow's datagram in two fragments with a raw
  //   socket: the second reaches the provider, never the native link.)
  // - The family first (the address loads need it anyway): the other family's packets
  //   leave the rule after one compare.
  // - Unless gso_native_fast, not a GSO super-packet: UDP length <= gso_threshold minus the
  //   IP header (`meta length` would cost a byte-order conversion).
  // - The first byte, as 4 bytes from the UDP payload's start: header form 0 (short).
  // - Long enough to be QUIC (29 bytes, quic_out's bound), and the sample that leaves ~1 in
  //   256 packets to quic_out, in one 4-byte load at UDP offset 28: it fails (the rule does
  //   not match) for a datagram shorter than 32 bytes, which quic_out then judges, and its
  //   second byte (payload byte 21) lies past the longest connection ID (20 bytes), so it is
  //   a header-protected packet-number byte or ciphertext: pseudo-random per packet.
  const std::string notrack = s.track_native ? "" : " notrack";
  for (const char* flow : {kFlow4, kFlow6}) {
    const bool v4 = flow == kFlow4;
    const std::uint32_t ip_header = v4 ? 20 : 40;
    const std::string size =
        s.gso_native_fast ? "" : " udp length <= " + std::to_string(s.gso_threshold - ip_header);
    o << "    meta nfproto " << (v4 ? "ipv4" : "ipv6") << " meta l4proto udp" << size
      << " @th,64,32 & 0x80000000 == 0 " << kSampleBits << " != 0 " << flow
      << (v4 ? " @native4" : " @native6") << notrack
      << " counter return comment \"native_out\"\n";
  }
  // By index (lo is always 1): no interface-name compare on every packet.
  o << "    meta oif lo return\n";
  if (!s.exempt_v4.empty()) o << "    ip daddr " << addr_set(s.exempt_v4) << " return\n";
  if (!s.exempt_v6.empty()) o << "    ip6 daddr " << addr_set(s.exempt_v6) << " return\n";
  // Fragments carry no port (non-first ones) or only part of a datagram: never native.
  o << "    ip frag-off & 0x3fff != 0 goto to_channel\n"
       "    exthdr frag exists goto to_channel\n";
  // The user's native prefixes (a LAN): unmarked, except DNS (a LAN resolver forwards the
  // names to the ISP, so DNS keeps the channel even there).
  for (const auto& [family, list] : {std::pair{"ip", &s.native_v4}, {"ip6", &s.native_v6}}) {
    if (list->empty()) continue;
    // Positive matches, one port per rule: nft 1.0.6 merges adjacent compares of
    // neighbouring fields, and turned "udp dport != 53 udp sport != 53" into one 32-bit
    // "sport . dport != 53 . 53" (true unless BOTH are 53): DNS to the prefixes went native
    // (found by the lab test quicstepd_lab test_9_native_prefixes).
    const std::string to = std::string("    ") + family + " daddr " + addr_set(*list);
    for (const char* dns : {" udp dport 53", " udp sport 53", " tcp dport 53", " tcp sport 53"}) {
      o << to << dns << " goto to_channel\n";
    }
    o << to << " return\n";
  }
  // QUIC first: the bulk path evaluates as few rules as possible. A datagram to a QUIC port
  // from port 53 is not a loophole: it can only reach the native path through the native
  // set, which only the classifier fills, and the classifier sends port 53 to the channel.
  o << "    udp dport " << port_set(s.quic_ports) << " goto quic_out\n";
  if (s.dns_to_channel) {
    o << "    udp dport 53 goto to_channel\n    udp sport 53 goto to_channel\n"
         "    tcp dport 53 goto to_channel\n    tcp sport 53 goto to_channel\n";
  }
  if (s.tcp_to_channel) o << "    meta l4proto tcp goto to_channel\n";
  if (s.other_udp_to_channel) o << "    meta l4proto udp goto to_channel\n";
  if (s.other_protocols_to_channel) {
    o << "    meta l4proto != { tcp, udp } goto to_channel\n";
  }
  o << "  }\n";
}

void quic_out_chain(std::ostringstream& o, const RulesetSpec& s) {
  // Every way out of this chain but one sets the channel (or queue) mark. The one exception
  // is a flow already decided native: its packets keep their mark unchanged, so that the
  // route chain does not re-route them (a route lookup per packet on the bulk path), and
  // (unless track_native) skip conntrack and NAT altogether.
  const std::string notrack = s.track_native ? "" : " notrack";
  // Bulk-path counters are anonymous (a per-CPU add; a named counter costs an object
  // reference more on every packet); kernel_rules sums them by the rule's comment.
  o << "  chain quic_out {\n"
       // Shorter than any protected short-header packet (1 + 4 + 16 sample): unparseable.
       "    udp length < 29 goto to_channel\n"
       // Long header (first payload bit 1): the channel. Decided here, or queued to be
       // seen (the handshake's timing; the daemon's verdict is always the channel, and so
       // is queue bypass).
       "    @th,64,1 1 goto " << (s.observe_handshakes ? "decide_out" : "to_channel") << "\n";
  // GSO super-packets: nft sees only the first segment. Queued (and segmented) unless
  // gso_native_fast, which lets those of a flow already in the native set pass below.
  const std::string gso = "    meta length > " + std::to_string(s.gso_threshold) +
                          " goto decide_out\n";
  if (!s.gso_native_fast) o << gso;
  // A flow decided earlier. About one packet in 256 refreshes its element's timeout: those
  // whose sample byte (kSampleBits: under header protection or ciphertext, pseudo-random per
  // packet) is zero, and those of 29 to 31 bytes, too short for the sample. A live flow
  // stays in the set without a set update on every packet; an element that expires anyway
  // (a flow quieter than that) only sends the flow's next packet through the queue again,
  // where the daemon re-adds it.
  for (const char* flow : {kFlow4, kFlow6}) {
    const char* set = flow == kFlow4 ? "@native4" : "@native6";
    o << "    " << kSampleBits << " != 0 " << flow << " " << set << notrack
      << " counter return comment \"native_out\"\n"
         "    " << flow << " " << set << " update " << set << " { " << flow << " }" << notrack
      << " counter return comment \"native_out\"\n";
  }
  if (s.gso_native_fast) o << gso;
  o << "    " << kFlow4 << " @channel4 update @channel4 { " << kFlow4 << " } goto to_channel\n"
       "    " << kFlow6 << " @channel6 update @channel6 { " << kFlow6 << " } goto to_channel\n"
       "    goto decide_out\n"
       "  }\n";
  o << "  chain to_channel {\n    " << set_mark(s, s.mark_channel) << "\n  }\n";
  o << "  chain decide_out {\n    counter name \"decide_out\"\n    "
    << set_mark(s, s.mark_decide_out) << "\n  }\n";
}

// The queue path decides the host's own packets (on output); a forwarded packet (a LAN
// host's, the host a router) never meets out_decide. Without this chain a LAN host's
// handshake left natively (found in the lab: its Initial on the native link). Forwarded DNS,
// TCP and QUIC, and what else the policy sends to the channel, get mark_channel at
// prerouting, before their routing decision, by out_decide's selectors: the whole flow takes
// the channel (the classifier sees only local packets, so none moves native). The cheap
// compares come first: the host's own answers (UDP from a QUIC port to an ephemeral one)
// leave after the port compares; only candidates pay the route lookup that tells a
// forwarded packet from one to this host.
void forwarded_chains(std::ostringstream& o, const RulesetSpec& s) {
  o << "  chain forwarded {\n    type filter hook prerouting priority mangle; policy accept;\n"
       "    ip frag-off & 0x3fff != 0 goto forwarded_channel\n"
       "    exthdr frag exists goto forwarded_channel\n"
       "    udp dport " << port_set(s.quic_ports) << " goto forwarded_channel\n";
  if (s.dns_to_channel) o << "    meta l4proto { tcp, udp } th dport 53 goto forwarded_channel\n";
  if (s.tcp_to_channel) o << "    meta l4proto tcp goto forwarded_channel\n";
  if (s.other_udp_to_channel) o << "    meta l4proto udp goto forwarded_channel\n";
  if (s.other_protocols_to_channel) {
    o << "    meta l4proto != { tcp, udp } goto forwarded_channel\n";
  }
  o << "  }\n  chain forwarded_channel {\n    meta iif lo return\n"
       "    iifname \"" << s.channel_interface << "\" return\n"
       "    fib daddr type local return\n";
  if (!s.exempt_v4.empty()) o << "    ip daddr " << addr_set(s.exempt_v4) << " return\n";
  if (!s.exempt_v6.empty()) o << "    ip6 daddr " << addr_set(s.exempt_v6) << " return\n";
  for (const auto& [family, list] : {std::pair{"ip", &s.native_v4}, {"ip6", &s.native_v6}}) {
    if (list->empty()) continue;
    const std::string to = std::string("    ") + family + " daddr " + addr_set(*list);
    for (const char* dns : {" udp dport 53", " tcp dport 53"}) {
      o << to << dns << " " << set_mark(s, s.mark_channel) << " return\n";
    }
    o << to << " return\n";
  }
  o << "    " << set_mark(s, s.mark_channel) << "\n  }\n";
}

// After the queue (-250, before conntrack at -200): one verdict-map lookup per packet. The
// kernel's native fast path (mark unchanged) misses it and leaves at once.
void out_account_chain(std::ostringstream& o, const RulesetSpec& s) {
  // Stateless: nothing to do after the queue that the channel device's own chains (below)
  // do not do, and a base chain on the output hook costs every native packet (~0.2 s/GB of
  // the sender's CPU here) although it matches none of them. The daemon's native verdicts
  // (a flow's packets until the watchdog confirms it) go uncounted by the kernel (the
  // daemon counts its decisions) and tracked only if something else registered conntrack.
  if (stateless_nat(s)) return;
  // Zones are needed only when conntrack sees native packets: they keep a channel NAT
  // binding off the same 5-tuple sent natively. Untracked native packets never meet one.
  const std::string zone = s.nat && !s.stateless && s.track_native
                               ? " ct zone set " + std::to_string(s.ct_zone)
                               : "";
  o << "  chain out_account {\n"
       "    type filter hook output priority -250; policy accept;\n"
       "    meta mark & " << hex(s.mark_mask) << " vmap { " << hex(s.mark_channel)
    << " : goto account_channel, "
       // Still DECIDE_OUT here: the daemon's channel verdict leaves it, or no daemon listened
       // (queue bypass); routed to the channel either way.
    << hex(s.mark_decide_out) << " : goto account_channel, "
       // Marked native by a daemon verdict (the kernel's fast path counted in quic_out).
    << hex(s.mark_native) << " : goto account_native }\n"
       "  }\n"
       "  chain account_channel {\n    counter name \"channel_out\"" << zone << "\n  }\n"
       "  chain account_native {\n    counter name \"native_out\""
    << (s.track_native ? "" : " notrack") << "\n  }\n";
}

// The queue path's marks choose the channel by routing, and routing cannot move a socket
// bound to its device (SO_BINDTODEVICE: the kernel keeps the device when it routes the marked
// packet again): measured in test_24, such a socket's DNS query left natively. After the
// last route, a packet marked for the channel that leaves on another device is dropped and
// counted (channel_escaped) if it is TCP, DNS or to a QUIC port (what never leaves natively;
// a link's own ICMPv6 under other_protocols = "channel" still may). One mark compare per
// packet on postrouting; the routed path's guard does this on the native devices instead.
void escape_guard_chain(std::ostringstream& o, const RulesetSpec& s) {
  std::vector<std::uint16_t> never_native = s.quic_ports;  // (53 is never a QUIC port)
  never_native.insert(never_native.begin(), 53);
  o << "  chain channel_escape {\n"
       "    type filter hook postrouting priority filter; policy accept;\n"
       "    meta mark & " << hex(s.mark_mask) << " { " << hex(s.mark_channel) << ", "
    << hex(s.mark_decide_out) << " } oifname != \"" << s.channel_interface
    << "\" goto escaped\n  }\n"
       "  chain escaped {\n"
       "    meta l4proto tcp counter name \"channel_escaped\" drop\n"
       "    udp dport " << port_set(never_native)
    << " counter name \"channel_escaped\" drop\n  }\n";
}

void inbound_chains(std::ostringstream& o, const RulesetSpec& s) {
  const std::string zone = s.nat && !s.stateless && s.track_native
                               ? " ct zone set " + std::to_string(s.ct_zone)
                               : "";
  o << "  chain in_watch {\n"
       "    type filter hook prerouting priority -310; policy accept;\n";
  // From the channel: one interface-name compare (a call, ~40 ns on every inbound native
  // packet) leads to the channel's rules, in a chain of their own. The server's long headers
  // on the channel are queued to be seen (the handshake RTT).
  const std::string from_channel = "    iifname \"" + s.channel_interface + "\"";
  const std::string observe = "    udp sport " + port_set(s.quic_ports) + " @th,64,1 1";
  std::string channel_rules;
  if (stateless_nat(s)) {
    // Counted and rewritten at the channel device's ingress already.
    if (s.observe_handshakes) channel_rules = observe + " goto observe_in\n";
  } else {
    if (s.observe_handshakes) {
      channel_rules = observe + " counter name \"channel_in\"" + zone + " goto observe_in\n";
    }
    channel_rules += "    counter name \"channel_in\"" + zone + " accept\n";
  }
  // A goto: falling off from_channel's end ends the base chain (policy accept).
  o << from_channel << (channel_rules.empty() ? " return\n" : " goto from_channel\n");
  // Native QUIC answers, in one rule: skip conntrack (unless track_native: their outbound
  // half is untracked too), counted (the counter runs before the port lookup), and only
  // those to a watched flow's port go on to the watch set (and its flows' to the queue).
  o << "    udp sport " << port_set(s.quic_ports) << (s.track_native ? "" : " notrack")
    << " counter udp dport @watchports goto in_watched comment \"native_in\"\n"
       "  }\n"
       "  chain in_watched {\n"
       "    ip daddr . udp dport . ip saddr . udp sport @watch4 goto watch_in\n"
       "    ip6 daddr . udp dport . ip6 saddr . udp sport @watch6 goto watch_in\n"
       "  }\n"
       "  chain watch_in {\n    counter name \"watch_in\"\n    "
    << set_mark(s, s.mark_decide_in) << "\n  }\n";
  if (!channel_rules.empty()) o << "  chain from_channel {\n" << channel_rules << "  }\n";
  if (s.observe_handshakes) {
    o << "  chain observe_in {\n    " << set_mark(s, s.mark_decide_in) << "\n  }\n";
  }
  if (s.nat && !s.stateless) {
    o << "  chain post_nat {\n"
         "    type nat hook postrouting priority srcnat; policy accept;\n"
         "    oifname \"" << s.channel_interface << "\" masquerade\n"
         "  }\n";
    // After masquerade (its binding is confirmed later, at conntrack's last hook: a packet
    // dropped here leaves none behind): the source must be one of the interface's own.
    o << "  chain post_nat_source {\n"
         "    type filter hook postrouting priority srcnat + 1; policy accept;\n";
    for (const auto& [ip, nfproto, sources] :
         {std::tuple{"ip", "ipv4", &s.channel_sources_v4},
          std::tuple{"ip6", "ipv6", &s.channel_sources_v6}}) {
      o << "    oifname \"" << s.channel_interface << "\" meta nfproto " << nfproto
        << " meta l4proto { tcp, udp }";
      if (!sources->empty()) o << " " << ip << " saddr != " << addr_set(*sources);
      o << " counter name \"channel_foreign_source\" drop\n";
    }
    o << "  }\n";
  }
}

// The channel's DNS (stateless addressing, spec.channel_dns_v4/v6; client/README.md, "DNS
// through the channel"): a query (UDP or TCP to port 53) leaving into the channel is sent to
// the channel's resolver instead, and its answers come back from the address it was sent to.
// The maps, keyed by the client's port (a resolver's query port lives for one query; a TCP
// connection's for its life), remember that address; every query refreshes its port's
// entry, also one sent to the channel's resolver itself, so an old entry never renames a
// later answer. IPv4 answers in fragments: the first fragment's identification keeps the
// source for the rest (in order, as a tunnel delivers them); IPv6 likewise by the fragment
// header's identification, where the fragment header follows the IPv6 header.
void channel_dns_maps(std::ostringstream& o, const RulesetSpec& s) {
  if (s.channel_dns_v4.empty() && s.channel_dns_v6.empty()) return;
  o << "  counter dns_redirected {\n  }\n";
  for (const auto& [fam, addr, frag] :
       {std::tuple{"4", "ipv4_addr", "typeof ip id : ip saddr"},
        std::tuple{"6", "ipv6_addr", "typeof frag id : ip6 saddr"}}) {
    o << "  map dns" << fam << " {\n    type inet_service : " << addr
      << "\n    flags dynamic,timeout\n    timeout " << s.native_timeout.count() << "s\n    size "
      << s.set_size << "\n  }\n"
      << "  map dnsfrag" << fam << " {\n    " << frag
      << "\n    flags dynamic,timeout\n    timeout 30s\n    size " << s.set_size << "\n  }\n";
  }
}

// Egress, after the source rewrite (which learnt the reverse maps with the address asked).
void channel_dns_egress(std::ostringstream& o, const RulesetSpec& s) {
  for (const auto& [fam, proto, ip, dns] :
       {std::tuple{"4", "ip", "ip", &s.channel_dns_v4},
        std::tuple{"6", "ip6", "ip6", &s.channel_dns_v6}}) {
    if (dns->empty()) continue;
    const std::string query =
        std::string("    meta protocol ") + proto + " meta l4proto { tcp, udp } th dport 53";
    o << query << " update @dns" << fam << " { th sport : " << ip << " daddr }\n"
      << query << " " << ip << " daddr != " << *dns << " counter name \"dns_redirected\" " << ip
      << " daddr set " << *dns << "\n";
  }
}

// Ingress, before the reverse maps (keyed by the address asked).
void channel_dns_ingress(std::ostringstream& o, const RulesetSpec& s) {
  for (const auto& [fam, ip, dns, tunnel] :
       {std::tuple{"4", "ip", &s.channel_dns_v4, &s.tunnel_v4},
        std::tuple{"6", "ip6", &s.channel_dns_v6, &s.tunnel_v6}}) {
    if (dns->empty() || tunnel->empty()) continue;
    const std::string to = std::string("    ") + ip + " daddr " + *tunnel;
    o << to << " " << ip << " saddr " << *dns << " meta l4proto { tcp, udp } th sport 53 " << ip
      << " saddr set th dport map @dns" << fam << "\n";
    if (fam[0] == '4') {
      o << to << " ip frag-off & 0x3fff == 0x2000 udp sport 53 update @dnsfrag4 { ip id : ip "
           "saddr }\n"
        << to << " ip saddr " << *dns
        << " ip frag-off & 0x1fff != 0 ip saddr set ip id map @dnsfrag4\n";
    } else {
      // By the identification's offset right after the IPv6 header (nft takes no `frag id`
      // as a map key in a statement): only a fragment header there is used.
      o << to << " ip6 nexthdr ipv6-frag frag frag-off 0 frag more-fragments 1 udp sport 53 "
           "update @dnsfrag6 { @nh,352,32 : ip6 saddr }\n"
        << to << " ip6 saddr " << *dns
        << " ip6 nexthdr ipv6-frag frag frag-off != 0 ip6 saddr set @nh,352,32 map @dnsfrag6\n";
    }
  }
}

// Stateless addressing: the channel device's own table. Only packets that cross the
// WireGuard interface pass its chains (native packets never do): egress counts and rewrites
// the source to the tunnel address (learning the reverse maps), ingress counts and rewrites
// the destination back to the local address the flow used: by its ports and remote address,
// else by the remote address alone; a packet neither map knows keeps the tunnel address (no
// socket). The chains are bound to the device: they exist while it does (the daemon creates
// or attaches the device before installing the rules).
void channel_device_table(std::ostringstream& o, const RulesetSpec& s) {
  o << "table netdev " << s.table << " {\n  counter channel_out {\n  }\n"
       "  counter channel_in {\n  }\n";
  reverse_maps(o, s);
  channel_dns_maps(o, s);
  o << "  chain channel_egress {\n    type filter hook egress device \"" << s.channel_interface
    << "\" priority 0; policy accept;\n    counter name \"channel_out\"\n";
  if (s.routed) {
    o << "    meta l4proto udp th dport " << port_set(s.quic_ports) << " log group " << s.log_group
      << "\n";
  }
  rewrite_source(o, s);
  channel_dns_egress(o, s);
  o << "  }\n  chain " << kChannelIngressChain << " {\n    type filter hook ingress device \""
    << s.channel_interface << "\" priority 0; policy accept;\n"
       "    counter name \"channel_in\"\n";
  channel_dns_ingress(o, s);
  // Routed: the rewritten packet goes on to channel_seen (the server's long headers logged).
  const std::string seen = s.routed ? " goto channel_seen" : " accept";
  for (const auto& [fam, ip, tunnel] :
       {std::tuple{"4", "ip", &s.tunnel_v4}, std::tuple{"6", "ip6", &s.tunnel_v6}}) {
    if (tunnel->empty()) continue;
    const std::string to = std::string("    ") + ip + " daddr " + *tunnel;
    o << to << " meta l4proto { tcp, udp } " << ip << " daddr set th dport . th sport . " << ip
      << " saddr map @rev" << fam << seen << "\n"
      << to << " " << ip << " daddr set " << ip << " saddr map @revany" << fam << seen << "\n";
  }
  o << "  }\n";
  if (s.routed) {
    o << "  chain channel_seen {\n    meta l4proto udp th sport " << port_set(s.quic_ports)
      << " @th,64,1 1 log group " << s.log_group << "\n  }\n";
  }
  o << "}\n";
}

// A tproxy channel's chains (nft_rules.hpp, "A tproxy channel"), in table inet T.
void tproxy_chains(std::ostringstream& o, const RulesetSpec& s) {
  const std::string ports = port_set(s.quic_ports);
  const std::string port = std::to_string(s.tproxy_port);
  o << "  chain to_proxy_out {\n    counter name \"channel_out\"\n"
       "    meta l4proto udp th dport " << ports << " log group " << s.log_group << "\n  }\n"
       "  chain to_proxy {\n";
  for (const char* proto : {"udp", "tcp"}) {
    o << "    meta l4proto " << proto << " tproxy ip to 127.0.0.1:" << port << " accept\n"
      << "    meta l4proto " << proto << " tproxy ip6 to [::1]:" << port << " accept\n";
  }
  // No socket at the port (the proxy client is not running): never native, counted.
  o << "    counter name \"channel_refused\" drop\n  }\n"
       "  chain from_proxy {\n    counter name \"channel_in\"\n"
       "    meta l4proto udp th sport " << ports << " @th,64,1 1 log group " << s.log_group
    << "\n  }\n";
}

// A forwarding host's (spec.forwarded_zone) channel packets in conntrack zone ct_zone, so
// that a flow moved native starts a new entry in zone 0, which meets the host's own source
// NAT: the channel's entry was made when its first packet left through the channel, which a
// masquerade on the uplink did not match, and the kernel keeps an entry's NAT decision (a
// LAN host's native packets left with its own address, and the flow stalled). Both hooks at
// raw priority, before conntrack, so the routing decision is known only on output; at
// prerouting the forwarded packets the routing rules send to the channel (routing.cpp,
// routed_routing_commands) are picked by the same selectors, in the same order. Flows in
// routed4/6 stay in zone 0.
//
// A device channel: the channel's packets on output by their route, and its answers (the
// device in). A tproxy channel: the forwarded channel packets also get mark_channel, which
// routes them to the proxy's socket (routing.hpp, forwarded_mark; routed_forward hands them
// over), and the proxy's answers to a LAN host (on output, from an address not local to one
// not local) are the zone's; the host's own flows through the proxy keep zone 0, as before.
void forwarded_zone_chains(std::ostringstream& o, const RulesetSpec& s) {
  const bool tproxy = s.tproxy_port != 0;
  std::string zone = " ct zone set " + std::to_string(s.ct_zone);
  if (tproxy) zone += " " + set_mark(s, s.mark_channel);
  const std::string native =
      "    ip daddr . udp sport . udp dport @routed4 return\n"
      "    ip6 daddr . udp sport . udp dport @routed6 return\n";
  o << "  chain zone_out {\n    type filter hook output priority raw; policy accept;\n";
  if (tproxy) {
    o << "    fib saddr type != local fib daddr type != local ct zone set " << s.ct_zone << "\n";
  } else {
    // DNS and TCP by their route; QUIC by routed_out's mark (which re-routes the packet after
    // the hook: its oif here is still the native device's).
    o << native << "    oifname \"" << s.channel_interface << "\"" << zone << " return\n"
      << "    meta mark & " << hex(s.mark_mask) << " == " << hex(s.mark_channel) << zone << "\n";
  }
  o << "  }\n  chain zone_forward {\n    type filter hook prerouting priority raw; policy accept;\n";
  if (tproxy) {
    o << "    meta iif lo return\n";
  } else {
    o << "    iifname \"" << s.channel_interface << "\"" << zone << " return\n";
  }
  o << "    fib daddr type local return\n" << native;
  auto to_main = [&](const std::vector<std::string>& v4, const std::vector<std::string>& v6) {
    if (!v4.empty()) o << "    ip daddr " << addr_set(v4) << " return\n";
    if (!v6.empty()) o << "    ip6 daddr " << addr_set(v6) << " return\n";
  };
  to_main(s.exempt_v4, s.exempt_v6);
  if (s.dns_to_channel) o << "    meta l4proto { tcp, udp } th dport 53" << zone << " return\n";
  to_main(s.native_v4, s.native_v6);
  if (s.tcp_to_channel) o << "    meta l4proto tcp" << zone << " return\n";
  o << "    udp dport " << port_set(s.quic_ports) << zone << "\n  }\n";
}

// The routed native path's flows. A device channel: the host's own QUIC is routed natively
// by the routing rules, and the route chain on output (the kernel routes the packet again
// when it changes the mark) gives mark_channel to every QUIC packet whose flow is *not* in
// routed4/6, which one fwmark rule per family sends to the channel table (routing.hpp,
// quic_channel_mark): the bulk of a moved flow is routed once, natively, and keeps the
// native device's checksum offload (it was routed to the channel and re-routed by
// mark_native until 2026-12-06: 18% more CPU per GB of upload, 0.80-0.85x native;
// client/results/2026-12-06-*). The chain runs before raw, so that zone_out sees its mark.
// Forwarded packets, and a tproxy channel's, are routed to the channel by port, and the
// packets of a flow in routed4/6 get mark_native (at prerouting for forwarded ones, before
// their routing decision), which one rule sends to main.
// The sets have no timeout: the daemon deletes each element it added (RoutedPath).
void quic_route_chain(std::ostringstream& o, const RulesetSpec& s) {
  o << "  chain quic_route {\n"
       "    ip daddr . udp sport . udp dport @routed4 return\n"
       "    ip6 daddr . udp sport . udp dport @routed6 return\n"
       // Sent native on purpose (the lift datagrams' socket carries mark_native).
       "    meta mark & " << hex(s.mark_mask) << " == " << hex(s.mark_native) << " return\n";
  // As the routing rules before the channel's: the channel's endpoints and native prefixes
  // (DNS is not on a QUIC port) keep the main table.
  for (const auto& [ip, list] : {std::pair{"ip", &s.exempt_v4}, {"ip6", &s.exempt_v6},
                                 {"ip", &s.native_v4}, {"ip6", &s.native_v6}}) {
    if (!list->empty()) o << "    " << ip << " daddr " << addr_set(*list) << " return\n";
  }
  o << "    " << set_mark(s, s.mark_channel) << "\n  }\n";
}

void routed_flow_table(std::ostringstream& o, const RulesetSpec& s) {
  o << "table inet " << s.table << " {\n";
  for (const auto& [fam, addr] : {std::pair{"4", "ipv4_addr"}, std::pair{"6", "ipv6_addr"}}) {
    o << "  set routed" << fam << " {\n    type " << addr
      << " . inet_service . inet_service\n    size " << s.set_size << "\n  }\n";
  }
  const bool tproxy = s.tproxy_port != 0;
  if (!tproxy && s.switch_hold) {
    for (const auto& [fam, addr] : {std::pair{"4", "ipv4_addr"}, std::pair{"6", "ipv6_addr"}}) {
      o << "  set switching" << fam << " {\n    type " << addr
        << " . inet_service . inet_service\n    flags timeout\n    timeout "
        << s.switching_timeout.count() << "s\n    size " << s.set_size << "\n  }\n";
    }
  }
  if (!tproxy && s.dns_to_channel) o << "  counter dns_rerouted {\n  }\n";
  if (!tproxy) {
    // A moved flow's packets leave after one rule (no jump); quic_route checks them again.
    const std::string quic = "    udp dport " + port_set(s.quic_ports);
    o << "  chain routed_out {\n    type route hook output priority " << kRoutedOutPriority
      << "; policy accept;\n"
      << quic << " ip daddr . udp sport . udp dport @routed4 return\n"
      << quic << " ip6 daddr . udp sport . udp dport @routed6 return\n";
    if (s.switch_hold) {
      // A switching flow's short headers (the header form bit clear) wait in the queue.
      o << quic << " ip daddr . udp sport . udp dport @switching4 @th,64,1 0 goto hold_queue\n"
        << quic << " ip6 daddr . udp sport . udp dport @switching6 @th,64,1 0 goto hold_queue\n";
    }
    o << quic << " goto quic_route\n"
      // A QUIC datagram built for its native route and re-routed into the channel, longer
      // than the channel's MTU (an application's path-MTU probe before its flow moved), is
      // refused with "fragmentation needed", which the kernel sends to itself: delivered,
      // it would set the MTU of the socket's own route, the *native* one, to the channel's
      // for 10 minutes (a route exception), and every later connection to that server
      // would be held to the channel's MTU natively. The sender still learns of the refusal
      // (its send fails with EMSGSIZE). Inner header at 8 octets past the ICMP header
      // (IPv4 without options: a UDP socket's).
      << "    meta oif lo icmp type destination-unreachable icmp code frag-needed @th,136,8 17 "
      << "@th,240,16 " << port_set(s.quic_ports) << " drop\n"
      << "    meta oif lo icmpv6 type packet-too-big @th,112,8 17 @th,400,16 "
      << port_set(s.quic_ports) << " drop\n";
    // A socket that names its interface (IP_UNICAST_IF: systemd-resolved's sockets to a
    // link's DNS servers) is routed through it past the DNS rule, since the channel's table
    // has no route there, and the guard would drop its queries: DNS whose route is not the
    // channel's (nor lo's: a local resolver) is routed again by the channel mark, which
    // leaves the interface out. (A socket bound to its device, SO_BINDTODEVICE, keeps it:
    // its DNS meets the guard.)
    if (s.dns_to_channel) {
      o << "    meta l4proto { tcp, udp } th dport 53 meta oifname != { \"" << s.channel_interface
        << "\", \"lo\" } goto dns_route\n";
    }
    o << "  }\n";
    if (s.dns_to_channel) {
      o << "  chain dns_route {\n";
      for (const auto& [ip, list] : {std::pair{"ip", &s.exempt_v4}, {"ip6", &s.exempt_v6}}) {
        if (!list->empty()) o << "    " << ip << " daddr " << addr_set(*list) << " return\n";
      }
      o << "    counter name \"dns_rerouted\" " << set_mark(s, s.mark_channel) << "\n  }\n";
    }
    if (s.switch_hold) o << "  chain hold_queue {\n  }\n";  // its queue rule: netlink
    // Forwarded packets meet the routing rules' QUIC ports (fail closed without this
    // table): a forwarded moved flow's get mark_native, as a tproxy channel's. Only on a
    // forwarding host: the chain costs every packet the host receives a set lookup (~3% of
    // a bulk upload's sender CPU in perf, its ACKs), and the table is installed again when
    // forwarding is switched on (Daemon::check_forwarding).
    if (s.forwarded_zone) {
      const std::string native = set_mark(s, s.mark_native);
      o << "  chain routed_forward {\n"
        << "    type filter hook prerouting priority mangle; policy accept;\n"
        << "    ip daddr . udp sport . udp dport @routed4 " << native << "\n"
        << "    ip6 daddr . udp sport . udp dport @routed6 " << native << "\n  }\n";
    }
    quic_route_chain(o, s);
    if (s.forwarded_zone) forwarded_zone_chains(o, s);
    o << "}\n";
    return;
  }
  const std::string mark = set_mark(s, s.mark_native);
  // A marked packet leaves the chain (it is re-routed natively; its route before the
  // re-route is still lo's, which the rule below would take for a channel packet).
  auto rules = [&] {
    o << "    ip daddr . udp sport . udp dport @routed4 " << mark << " return\n"
      << "    ip6 daddr . udp sport . udp dport @routed6 " << mark << " return\n";
  };
  for (const char* c : {"channel_out", "channel_in", "channel_refused"}) {
    o << "  counter " << c << " {\n  }\n";
  }
  o << "  chain routed_out {\n    type route hook output priority mangle; policy accept;\n";
  rules();
  // A forwarding host: the proxy's answers to a LAN host (from the server's address to the
  // LAN's) leave for the LAN by the main table (TCP's would meet the routing rules' TCP rule
  // and loop back to the proxy), counted.
  const bool lan_proxy = s.forwarded_zone;
  if (lan_proxy) o << "    fib saddr type != local fib daddr type != local goto from_proxy_lan\n";
  // (The route is known on output: the routing rules chose it before this hook.)
  o << "    meta oif lo fib daddr type != local goto to_proxy_out\n";
  o << "  }\n  chain routed_forward {\n"
       "    type filter hook prerouting priority mangle; policy accept;\n";
  rules();
  // A LAN host's channel packets, marked by zone_forward: to the proxy's socket.
  if (lan_proxy) {
    o << "    meta mark & " << hex(s.mark_mask) << " == " << hex(s.mark_channel)
      << " goto to_proxy_lan\n";
  }
  o << "    meta iif lo fib daddr type != local goto to_proxy\n"
       "    meta iif lo fib saddr type != local goto from_proxy\n"
       "  }\n";
  tproxy_chains(o, s);
  if (lan_proxy) {
    // Copies with a prefix: a LAN host's packets are seen at prerouting and the proxy's
    // answers on output, the reverse of the host's own (RoutedPath::observe).
    const std::string ports = port_set(s.quic_ports);
    o << "  chain to_proxy_lan {\n    counter name \"channel_out\"\n"
         "    meta l4proto udp th dport " << ports << " log prefix \"" << kLogPrefixOut
      << "\" group " << s.log_group << "\n    goto to_proxy\n  }\n"
         "  chain from_proxy_lan {\n    counter name \"channel_in\"\n"
         "    meta l4proto udp th sport " << ports << " @th,64,1 1 log prefix \"" << kLogPrefixIn
      << "\" group " << s.log_group << "\n    " << set_mark(s, s.mark_native) << "\n  }\n";
  }
  if (s.forwarded_zone) forwarded_zone_chains(o, s);
  o << "}\n";
}

std::string element(const common::FlowKey& f) {
  return f.client.to_string() + " . " + std::to_string(f.client_port) + " . " +
         f.server.to_string() + " . " + std::to_string(f.server_port);
}

std::string routed_element(const common::FlowKey& f) {
  return f.server.to_string() + " . " + std::to_string(f.client_port) + " . " +
         std::to_string(f.server_port);
}

}  // namespace

std::string set_name(FlowSet set, const common::FlowKey& f) {
  if (set == FlowSet::watch_port) return "watchports";
  return std::string(to_string(set)) + (f.client.family == common::IpFamily::v4 ? "4" : "6");
}

common::Outcome check_spec(const RulesetSpec& s) {
  if (!valid_name(s.table, 32)) return common::Failure("bad table name `" + s.table + "'");
  if (!valid_name(s.channel_interface, 15)) {
    return common::Failure("bad channel interface name `" + s.channel_interface + "'");
  }
  if (s.quic_ports.empty() || s.quic_ports.size() > 64) {
    return common::Failure("1 to 64 QUIC ports needed");
  }
  for (auto p : s.quic_ports) {
    if (p == 0) return common::Failure("QUIC port 0 is not a port");
  }
  // The bulk rule's UDP length bound (threshold - IPv6 header) must leave room for QUIC's
  // shortest datagram (29 bytes; the rule itself also needs 32 for its sample load).
  if (s.gso_threshold < 40 + 29 || s.gso_threshold > 65535) {
    return common::Failure("bad GSO threshold");
  }
  const std::uint32_t marks[] = {s.mark_channel, s.mark_native, s.mark_decide_out,
                                 s.mark_decide_in};
  std::set<std::uint32_t> seen;
  for (auto m : marks) {
    if (m == 0 || (m & ~s.mark_mask) != 0) {
      return common::Failure("mark " + hex(m) + " is zero or outside the mask " + hex(s.mark_mask));
    }
    if (!seen.insert(m).second) {
      return common::Failure("marks must be distinct: " + hex(m) + " repeats");
    }
  }
  for (const auto& list : {s.exempt_v4, s.exempt_v6, s.native_v4, s.native_v6}) {
    for (const auto& a : list) {
      if (!valid_address_text(a)) {
        return common::Failure("bad exempt address or prefix `" + a + "'");
      }
    }
  }
  for (const auto& list : {s.channel_sources_v4, s.channel_sources_v6}) {
    for (const auto& a : list) {
      if (!valid_address_text(a) || a.find('/') != std::string::npos) {
        return common::Failure("bad channel address `" + a + "'");
      }
    }
  }
  if (stateless_nat(s)) {
    for (const auto& a : {s.tunnel_v4, s.tunnel_v6}) {
      if (!a.empty() && (!valid_address_text(a) || a.find('/') != std::string::npos)) {
        return common::Failure("bad tunnel address `" + a + "'");
      }
    }
    for (const auto& a : {s.channel_dns_v4, s.channel_dns_v6}) {
      if (!a.empty() && (!valid_address_text(a) || a.find('/') != std::string::npos)) {
        return common::Failure("bad channel DNS address `" + a + "'");
      }
    }
  }
  if (s.tproxy_port != 0 && (!s.routed || s.channel_interface != "lo")) {
    return common::Failure("a tproxy channel needs the routed native path and interface lo");
  }
  if (s.ct_zone == 0) return common::Failure("conntrack zone 0 is the native zone");
  if (s.set_size == 0 || s.native_timeout.count() <= 0 || s.watch_timeout.count() <= 0) {
    return common::Failure("set size and timeouts must be positive");
  }
  return {};
}

std::string ruleset_text(const RulesetSpec& s) {
  std::ostringstream o;
  // One transaction: create if absent, delete, create afresh. Never a moment without rules.
  // The netdev table too (stateless addressing has one; a reload to another mode removes it).
  o << delete_table_text(s.table);
  if (s.routed) {
    if (s.tproxy_port == 0) channel_device_table(o, s);
    routed_flow_table(o, s);
    return o.str();
  }
  o << "table inet " << s.table << " {\n";
  for (const char* c : {"channel_out", "native_out", "decide_out", "channel_in", "native_in",
                        "watch_in", "channel_escaped"}) {
    o << "  counter " << c << " {\n  }\n";
  }
  if (s.nat && !s.stateless) o << "  counter channel_foreign_source {\n  }\n";
  flow_sets(o, s);
  out_decide_chain(o, s);
  quic_out_chain(o, s);
  out_account_chain(o, s);
  inbound_chains(o, s);
  forwarded_chains(o, s);
  escape_guard_chain(o, s);
  o << "}\n";
  if (stateless_nat(s)) channel_device_table(o, s);
  return o.str();
}

std::string delete_table_text(std::string_view table) {
  const std::string t(table);
  return "table inet " + t + "\ndelete table inet " + t + "\ntable netdev " + t +
         "\ndelete table netdev " + t + "\n";
}

std::string iptables_install_text(const RulesetSpec& s) {
  std::ostringstream o;
  // One rule in each base chain, no chain of our own: every packet crosses OUTPUT, and a
  // jump to a user chain costs it a counter and the jump (iptables-nft counts every rule
  // that matches; a non-matching mark compare costs neither). ~70 ns less per native packet
  // on this machine (bench_rule_cost.py, client/README). The comment is how they are found
  // again; iptables-nft makes it an xt match after the mark compare, so only queued packets
  // evaluate it.
  o << "*raw\n"
    << "-I OUTPUT 1 -m mark --mark " << hex(s.mark_decide_out) << "/" << hex(s.mark_mask)
    << " -m comment --comment " << kIptablesComment << " -j NFQUEUE --queue-num "
    << s.queue_outbound << " --queue-bypass\nCOMMIT\n";
  return o.str();
}

std::vector<std::string> hold_queue_chains(const RulesetSpec& s) {
  if (!s.routed || !s.switch_hold || s.tproxy_port != 0) return {};
  return {"hold_queue"};
}

std::vector<std::string> inbound_queue_chains(const RulesetSpec& s) {
  // Inbound there is no re-route to wait for: the queue sits at the end of the chains that
  // pick the packets (an iptables raw PREROUTING rule cost every inbound packet a base
  // chain, ~40-50 ns).
  if (s.routed) return {};
  std::vector<std::string> chains{"watch_in"};
  if (s.observe_handshakes) chains.emplace_back("observe_in");
  return chains;
}

std::string iptables_remove_text(const std::string& listing) {
  std::ostringstream o;
  std::istringstream lines(listing);
  bool any = false;
  const std::string tag = std::string(" --comment ") + kIptablesComment + " ";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("-A ", 0) != 0 || line.find(tag) == std::string::npos) continue;
    if (!any) o << "*raw\n";
    any = true;
    o << "-D " << line.substr(3) << "\n";
  }
  if (any) o << "COMMIT\n";
  return o.str();
}

std::string iptables_remove_legacy_text() {
  return "*raw\n-D OUTPUT -j QUICSTEP_OUT\n-D PREROUTING -j QUICSTEP_IN\n"
         "-F QUICSTEP_OUT\n-F QUICSTEP_IN\n-X QUICSTEP_OUT\n-X QUICSTEP_IN\nCOMMIT\n";
}

std::string_view to_string(FlowSet s) {
  switch (s) {
    case FlowSet::native: return "native";
    case FlowSet::channel: return "channel";
    case FlowSet::watch: return "watch";
    case FlowSet::watch_port: return "watch_port";
    case FlowSet::routed: return "routed";
    case FlowSet::switching: return "switching";
  }
  return "?";
}

std::string add_element_text(std::string_view table, FlowSet set, const common::FlowKey& flow,
                             std::chrono::seconds timeout) {
  if (set == FlowSet::watch_port) {
    return "add element inet " + std::string(table) + " watchports { " +
           std::to_string(flow.client_port) + " }\n";
  }
  if (set == FlowSet::routed) {
    return "add element inet " + std::string(table) + " " + set_name(set, flow) + " { " +
           routed_element(flow) + " }\n";
  }
  if (set == FlowSet::switching) {
    return "add element inet " + std::string(table) + " " + set_name(set, flow) + " { " +
           routed_element(flow) + " timeout " + std::to_string(timeout.count()) + "s }\n";
  }
  return "add element inet " + std::string(table) + " " + set_name(set, flow) + " { " +
         element(flow) + " timeout " + std::to_string(timeout.count()) + "s }\n";
}

std::string delete_element_text(std::string_view table, FlowSet set,
                                const common::FlowKey& flow) {
  const std::string e = set == FlowSet::watch_port ? std::to_string(flow.client_port)
                        : set == FlowSet::routed || set == FlowSet::switching
                            ? routed_element(flow)
                                                   : element(flow);
  return "delete element inet " + std::string(table) + " " + set_name(set, flow) + " { " + e +
         " }\n";
}

std::string element_op_text(std::string_view table, const SetElementOp& op) {
  return op.add ? add_element_text(table, op.set, op.flow, op.timeout)
                : delete_element_text(table, op.set, op.flow);
}

std::vector<std::uint8_t> set_element_key(const common::FlowKey& flow) {
  std::vector<std::uint8_t> key;
  key.reserve(40);
  auto port = [&key](std::uint16_t p) {
    key.insert(key.end(), {static_cast<std::uint8_t>(p >> 8), static_cast<std::uint8_t>(p), 0, 0});
  };
  const auto client = flow.client.octets();
  key.insert(key.end(), client.begin(), client.end());
  port(flow.client_port);
  const auto server = flow.server.octets();
  key.insert(key.end(), server.begin(), server.end());
  port(flow.server_port);
  return key;
}

std::vector<std::uint8_t> set_element_key(FlowSet set, const common::FlowKey& flow) {
  if (set == FlowSet::routed || set == FlowSet::switching) {
    std::vector<std::uint8_t> key;
    key.reserve(24);
    const auto server = flow.server.octets();
    key.insert(key.end(), server.begin(), server.end());
    for (std::uint16_t p : {flow.client_port, flow.server_port}) {
      key.insert(key.end(), {static_cast<std::uint8_t>(p >> 8), static_cast<std::uint8_t>(p), 0, 0});
    }
    return key;
  }
  if (set != FlowSet::watch_port) return set_element_key(flow);
  return {static_cast<std::uint8_t>(flow.client_port >> 8),
          static_cast<std::uint8_t>(flow.client_port)};
}

}  // namespace quicstep::client::kernel
