#!/usr/bin/env bash
# Sets up one lab host inside its container: the same addresses, routes, WireGuard
# channel, NAT and DNS names as lab/qslab builds in namespaces (lab/qslab_lib/topology.py).
# Docker gives each network a host-side gateway (.254 / ::fe here, never used for routing:
# the networks are `internal`); every default route points at the lab's own routers.
set -euo pipefail
role=$1

route() {  # route DEST4 VIA4 DEST6 VIA6
  ip route replace "$1" via "$2"
  ip -6 route replace "$3" via "$4"
}

wg_key_exchange() {  # wg_key_exchange NAME PEER: writes our public key, waits for the peer's
  umask 077
  [[ -f /keys/$1.key ]] || wg genkey >/keys/$1.key
  wg pubkey </keys/$1.key >/keys/$1.pub
  for _ in $(seq 100); do [[ -s /keys/$2.pub ]] && return; sleep 0.2; done
  echo "no public key from $2" >&2; exit 1
}

case $role in
  client)
    route default 198.18.1.1 default 2001:db8:1::1
    # The second native address, for address-migration tests.
    native=$(ip -o addr show to 198.18.1.2 | awk '{print $2}')
    ip addr add 198.18.1.3/24 dev "$native"
    ip -6 addr add 2001:db8:1::3/64 dev "$native" nodad
    wg_key_exchange client provider
    wireguard-go qsw-client
    wg set qsw-client private-key /keys/client.key fwmark 51820 \
      peer "$(cat /keys/provider.pub)" endpoint 198.18.3.2:51820 \
      allowed-ips 0.0.0.0/0,::/0 persistent-keepalive 25
    ip addr add 198.19.255.2/32 dev qsw-client
    ip -6 addr add 2001:db8:ffff::2/128 dev qsw-client nodad
    ip link set qsw-client up
    ip -4 route add default dev qsw-client table 51820
    ip -6 route add default dev qsw-client table 51820
    ip -4 rule add from 198.19.255.2 lookup 51820 pref 100
    ip -6 rule add from 2001:db8:ffff::2 lookup 51820 pref 100
    printf 'nameserver 198.18.4.53\nnameserver 2001:db8:4::53\n' >/etc/resolv.conf
    ;;
  censor)
    route default 198.18.2.1 default 2001:db8:2::1
    ;;
  inet)
    route 198.18.1.0/24 198.18.2.2 2001:db8:1::/64 2001:db8:2::2
    # Optional one-way delay per direction on the client's ISP link, where the engine's
    # kernel has netem (this lab's namespaces use qs_delay_line instead).
    if [[ -n ${LAB_ISP_DELAY_MS:-} ]]; then
      dev=$(ip -o addr show to 198.18.2.1 | awk '{print $2}')
      tc qdisc replace dev "$dev" root netem delay "${LAB_ISP_DELAY_MS}ms"
    fi
    ;;
  provider)
    route default 198.18.3.1 default 2001:db8:3::1
    wg_key_exchange provider client
    wireguard-go qsw-prov
    wg set qsw-prov private-key /keys/provider.key listen-port 51820 \
      peer "$(cat /keys/client.pub)" allowed-ips 198.19.255.2/32,2001:db8:ffff::2/128
    ip addr add 198.19.255.1/24 dev qsw-prov
    ip -6 addr add 2001:db8:ffff::1/64 dev qsw-prov nodad
    ip link set qsw-prov up
    uplink=$(ip -o addr show to 198.18.3.2 | awk '{print $2}')
    nft -f - <<NFT
table inet qslab_nat {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "$uplink" ip saddr 198.19.255.0/24 masquerade
    oifname "$uplink" ip6 saddr 2001:db8:ffff::/64 masquerade
  }
}
NFT
    ;;
  dns)
    route default 198.18.4.1 default 2001:db8:4::1
    exec dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
      --bind-interfaces --user=root --listen-address=198.18.4.53 --listen-address=2001:db8:4::53 \
      --log-queries --log-facility=- \
      --host-record=open.test,198.18.10.10,2001:db8:10::10 --host-record=www.open.test,198.18.10.10,2001:db8:10::10 \
      --host-record=blocked.test,198.18.10.11,2001:db8:10::11 --host-record=www.blocked.test,198.18.10.11,2001:db8:10::11 \
      --host-record=other.test,198.18.10.12,2001:db8:10::12 --host-record=www.other.test,198.18.10.12,2001:db8:10::12 \
      --host-record=nomigration.test,198.18.11.10,2001:db8:11::10 --host-record=www.nomigration.test,198.18.11.10,2001:db8:11::10 \
      --host-record=retry.test,198.18.11.11,2001:db8:11::11 --host-record=www.retry.test,198.18.11.11,2001:db8:11::11
    ;;
  srv1)
    route default 198.18.10.1 default 2001:db8:10::1
    ip addr add 198.18.10.11/24 dev "$(ip -o addr show to 198.18.10.10 | awk '{print $2}')"
    ip addr add 198.18.10.12/24 dev "$(ip -o addr show to 198.18.10.10 | awk '{print $2}')"
    ip -6 addr add 2001:db8:10::11/64 dev "$(ip -o addr show to 198.18.10.10 | awk '{print $2}')" nodad
    ip -6 addr add 2001:db8:10::12/64 dev "$(ip -o addr show to 198.18.10.10 | awk '{print $2}')" nodad
    ;;
  srv2)
    route default 198.18.11.1 default 2001:db8:11::1
    ip addr add 198.18.11.11/24 dev "$(ip -o addr show to 198.18.11.10 | awk '{print $2}')"
    ip -6 addr add 2001:db8:11::11/64 dev "$(ip -o addr show to 198.18.11.10 | awk '{print $2}')" nodad
    ;;
  *)
    echo "unknown role: $role" >&2; exit 2
    ;;
esac
echo "qslab: $role up"
exec sleep infinity
