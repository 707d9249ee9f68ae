// quicstep-tun's routing on Linux, as wg-quick routes a full tunnel: the TUN gets the
// tunnel's addresses and MTU; a table of its own holds a default route into the TUN for
// each family the tunnel has an address in, and an unreachable default for the other (so
// that family is blocked, never native); a rule sends every packet *not* carrying the
// engine's fwmark to that table. The engine's own sockets (relays, and the WireGuard
// helper's) carry the mark (MarkProtector, `--fwmark`) and take the main table, as
// protected sockets do on Android. Unlike wg-quick there is no `suppress_prefixlength 0`
// rule: a resolver on the local network must not get DNS names outside the engine.
//
// The routes and rules stay when the engine dies, and so does the (persistent) TUN: the
// traffic that needs a decision then meets a device nobody reads — no traffic, never a
// leak. remove_routes() undoes them (a clean stop, or `quicstep-tun --cleanup`).
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
};

// Sets the device up with its addresses and MTU, the table's default routes and the rules.
// Idempotent (replaces what is there). Errors: the `ip` command that failed and its output.
common::Outcome install_routes(const TunRouting& routing);

// Removes the rules and flushes the table; what is already gone is no error, so it never
// fails.
void remove_routes(const TunRouting& routing);

}  // namespace quicstep::client::tun
