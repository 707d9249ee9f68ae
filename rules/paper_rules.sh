#!/usr/bin/env bash
# The paper's kernel-only QUICstep (§3.2.3), for comparison with quicstepd (the throughput
# benchmark): DNS (UDP 53), all TCP and QUIC long headers (UDP to port 443 whose first
# payload bit is 1) are marked into the WireGuard routing table; everything else takes the
# ordinary route. No daemon, no watchdog, IPv4 only in the paper (IPv6 here too).
# As in the paper, channel packets keep the native source address ("permissive"): the
# provider must accept it (the lab's provider does not; add `nat` for masquerading on the
# WireGuard interface, which has the paper's NAT-binding problem for connected sockets).
#
#   rules/paper_rules.sh up   [IFACE] [TABLE] [nat]     (defaults: qsw-client 51820)
#   rules/paper_rules.sh down
# Run inside the client's namespace (`ip netns exec qs-client rules/paper_rules.sh up`).
set -euo pipefail

MARK=0x61       # distinct from quicstepd's marks: both modes can be compared one after another
PRIO=10200
cmd=${1:-}
IFACE=${2:-qsw-client}
TABLE=${3:-51820}
NAT=${4:-}

case "$IFACE" in (*[!A-Za-z0-9_.-]*|'') echo "paper_rules.sh: bad interface name \`$IFACE'" >&2; exit 2;; esac
case "$TABLE" in (*[!0-9]*|'') echo "paper_rules.sh: bad table \`$TABLE'" >&2; exit 2;; esac

down() {
  nft delete table inet quicstep_paper 2>/dev/null || true
  for fam in -4 -6; do
    while ip "$fam" rule del priority "$PRIO" 2>/dev/null; do :; done
  done
}

case "$cmd" in
  up)
    down
    for fam in -4 -6; do ip "$fam" rule add fwmark "$MARK" lookup "$TABLE" priority "$PRIO"; done
    nat_chain=""
    if [[ $NAT == nat ]]; then
      nat_chain="chain post { type nat hook postrouting priority srcnat; oifname \"$IFACE\" masquerade; }"
    fi
    # The paper's one rule (u32 on the first payload byte), as nft: a type route chain so
    # that the mark re-routes the packet.
    nft -f - <<NFT
table inet quicstep_paper {
  chain out {
    type route hook output priority mangle; policy accept;
    udp dport 53 meta mark set $MARK
    meta l4proto tcp meta mark set $MARK
    udp dport 443 @th,64,1 1 meta mark set $MARK
  }
  $nat_chain
}
NFT
    ;;
  down) down ;;
  *) echo "usage: paper_rules.sh up [IFACE] [TABLE] [nat] | down" >&2; exit 2 ;;
esac
