// quicstep-tun's routing on Linux, as wg-quick routes a full tunnel: the TUN gets the
// tunnel's addresses and MTU; a table of its own holds a default route into the TUN for
// each family the tunnel has an address in, and an unreachable default for the other (so
// that family is blocked, never native); a rule sends every packet *not* carrying the
// engine's fwmark to that table. The engine's own sockets (relays, and the WireGuard
// helper's) carry the mark (MarkProtector, `--fwmark`) and take the main table, as
// protected sockets do on Android. Unlike wg-quick there is no `suppress_prefixlength 0`
// rule: a resolver on the local network must not get DNS names outside the engine.
//
// A socket that names its interface bypasses the rule: IP_UNICAST_IF (systemd-resolved's
// sockets to a link's DNS servers: measured here, their queries left natively) makes the
// kernel skip a table whose route is not through that interface, and SO_BINDTODEVICE holds
// the socket to its device. So an nft table of its own (`quicstep_tun`: output and
// postrouting hooks) routes such a packet again with a changed mark (the interface then no longer
// counts), into the TUN; and what still leaves on another device without the engine's mark
// (a bound socket, a link-local destination) is dropped at postrouting if it is TCP, DNS or
// to a QUIC port, counted (`nft list counters table inet quicstep_tun`). A re-routed packet
// enters the TUN with the native source address, which the provider refuses: a DNS query
// the engine sends from the tunnel's address instead (client/tun/channel_dns.hpp); TCP or
// QUIC from such a socket fails closed. Only
// TCP, DNS and the QUIC ports are routed again or dropped, and multicast, broadcast and
// link-local destinations never routed again: the link's own traffic (neighbour discovery to
// a global next hop, which a first version routed into the TUN, breaking IPv6 natively in
// tun_engine_lab test_1; DHCP renewals) keeps its route.
//
// The routes and rules stay when the engine dies, and so does the (persistent) TUN: the
// traffic that needs a decision then meets a device nobody reads — no traffic, never a
// leak. remove_routes() undoes them (a clean stop, or `quicstep-tun --cleanup`). While the
// engine runs, another tool that removes a part (`ip rule flush`, `nft flush ruleset`, the
// device set down) gets it put back (tun_healing.hpp); meanwhile the nft table's guard, or
// the rule while the table is gone, keeps TCP, DNS and the QUIC ports off the native link.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/tun/wg_quick_uapi.hpp"
#include "common/error.hpp"

namespace quicstep::client::tun {

struct TunRouting {
  std::string device = "qst0";
  std::uint32_t table = 51830;
  std::uint32_t fwmark = 51830;
  std::uint32_t rule_priority = 30500;
  unsigned mtu = 1420;
  std::vector<IpPrefix> addresses;  // the tunnel's (wg-quick's Address)
  std::vector<std::uint16_t> quic_ports = {443};  // the policy's: never native unprotected
};

// The nft text that replaces (or creates) table inet quicstep_tun in one transaction. The
// mark that re-routes: the engine's fwmark never, a bit outside it (kRerouteMark).
inline constexpr std::uint32_t kRerouteMark = 0x40000000;
std::string guard_ruleset(const TunRouting& routing);

// Sets the device up with its addresses and MTU, the table's default routes, the rules and
// the nft table. Idempotent (replaces what is there). Errors: the `ip` command that failed and its output.
common::Outcome install_routes(const TunRouting& routing);
// Its three parts, each idempotent, for self-healing (tun_healing.hpp) to put back one:
// the device (up, MTU, addresses) and the table's default routes; the rules; the nft table.
common::Outcome install_device_routes(const TunRouting& routing);
common::Outcome install_rules(const TunRouting& routing);
// The rule of one family, added (self-healing adds only a missing one: replacing the other
// would open a moment without it).
common::Outcome add_rule(const TunRouting& routing, common::IpFamily family);
common::Outcome install_guard(const TunRouting& routing);

// Removes the rules, flushes the table and deletes the nft table; what is already gone is
// no error, so it never fails.
void remove_routes(const TunRouting& routing);

}  // namespace quicstep::client::tun
