// channel_icmp_rules: with stateless addressing, the ICMP errors that come back through the
// channel quote a packet whose source the channel device rewrote to the tunnel address. The
// kernel finds the socket an error is for by that quoted header, and the socket is bound to
// the local (native) address: without these rules every such error is lost (a UDP socket
// sent to a closed port through the channel waits for its timeout instead of seeing
// ECONNREFUSED; a "fragmentation needed" never lowers the path MTU).
//
// One rule per error type and family, inserted at the head of the channel device's ingress
// chain (table netdev): an ICMP error whose quoted source is the tunnel address gets it
// replaced by the local address the channel device learned for the quoted destination
// (@revany4/6, filled on egress), with the ICMP checksum updated incrementally (ICMPv6's
// covers the outer addresses as well; the rewrite of those that follows in the chain updates
// it again). The chain's later rules rewrite the outer destination as for any packet.
//
// Written over netlink (libnftnl): `nft` refuses a lookup of an address map keyed by a raw
// load (`@th,...`), and writes a raw store without a checksum update.
#pragma once

#include <string>
#include <string_view>

#include "client/kernel/nft_netlink.hpp"
#include "common/error.hpp"

namespace quicstep::client::kernel {

// Inserts the rules into chain `chain` of table netdev `table`, in one transaction, for each
// family whose tunnel address is not empty (`tunnel_v4`, `tunnel_v6`: textual addresses).
// Failures: a tunnel address that does not parse (quoted), the socket's, the kernel refusing
// the transaction.
common::Outcome insert_icmp_error_rules(NftNetlink& netlink, std::string_view table,
                                        std::string_view chain, const std::string& tunnel_v4,
                                        const std::string& tunnel_v6);

}  // namespace quicstep::client::kernel
