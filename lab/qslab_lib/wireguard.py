"""The handshake channel: WireGuard between the client and the provider.

wireguard-go (userspace; this kernel has no WireGuard) creates the TUN device in the
host's namespace, but its UAPI socket lives in /var/run/wireguard, shared by all
namespaces: interface names are unique machine-wide (qsw-...). `wg` configures it.

The provider's peer entry allows only the client's tunnel addresses, as a commercial
provider's would. The client gets the interface up, a routing table (default dev the
tunnel) and a rule for packets *sourced* from its tunnel addresses only; nothing else
goes into the channel unless `vpn on` (full VPN) adds wg-quick's rules.
"""
import os
import time

from . import state
from . import topology as topo
from .shell import LabError, run, ns

UAPI_DIR = "/var/run/wireguard"


def _keypair(name):
    priv = run("wg", "genkey").strip()
    pub = run("wg", "pubkey", input=priv + "\n").strip()
    key_file = state.path(f"{name}.key")
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(priv + "\n")
    return key_file, pub


def _start(host, ifname, procs):
    sock = os.path.join(UAPI_DIR, f"{ifname}.sock")
    if os.path.exists(sock):
        os.unlink(sock)  # stale socket of a crashed run (down checked it is ours)
    proc = state.start_daemon(f"wireguard-go-{host}", topo.netns(host),
                              ["wireguard-go", "-f", ifname],
                              env={"LOG_LEVEL": "error"})
    procs.append(proc)
    for _ in range(100):
        if os.path.exists(sock):
            return
        state.check_alive(proc, f"wireguard-go-{host}")
        time.sleep(0.05)
    raise LabError(f"wireguard-go did not create {sock}")


def up(procs):
    ch = topo.CHANNEL
    cn, pn = topo.netns("client"), topo.netns("provider")
    endpoint_v4 = topo.link("provider").v4(topo.link("provider").a_ids[0])
    ckey, cpub = _keypair("client")
    pkey, ppub = _keypair("provider")
    _start("provider", ch.provider_if, procs)
    _start("client", ch.client_if, procs)

    ns(pn, "wg", "set", ch.provider_if, "private-key", pkey, "listen-port", ch.listen_port,
       "peer", cpub, "allowed-ips", ",".join(ch.allowed_ips))
    ns(cn, "wg", "set", ch.client_if, "private-key", ckey, "fwmark", ch.fwmark,
       "peer", ppub, "endpoint", f"{endpoint_v4}:{ch.listen_port}",
       "allowed-ips", "0.0.0.0/0,::/0", "persistent-keepalive", "25")

    run("ip", "-n", pn, "addr", "add", f"{ch.provider_v4}/24", "dev", ch.provider_if)
    run("ip", "-n", pn, "-6", "addr", "add", f"{ch.provider_v6}/64", "dev", ch.provider_if, "nodad")
    run("ip", "-n", pn, "link", "set", ch.provider_if, "up")

    run("ip", "-n", cn, "addr", "add", f"{ch.client_v4}/32", "dev", ch.client_if)
    run("ip", "-n", cn, "-6", "addr", "add", f"{ch.client_v6}/128", "dev", ch.client_if, "nodad")
    # No router solicitations on the tunnel (there is no router behind it): the kernel sends
    # them from its link-local address with backoff forever, and each one is a stray channel
    # packet in the byte counts the lab tests compare with the provider's capture.
    ns(cn, "sysctl", "-qw", f"net.ipv6.conf.{ch.client_if}.router_solicitations=0")
    run("ip", "-n", cn, "link", "set", ch.client_if, "up")
    for fam in ("-4", "-6"):
        run("ip", "-n", cn, fam, "route", "add", "default", "dev", ch.client_if, "table", ch.table)
    run("ip", "-n", cn, "-4", "rule", "add", "from", ch.client_v4, "lookup", ch.table, "pref", "100")
    run("ip", "-n", cn, "-6", "rule", "add", "from", ch.client_v6, "lookup", ch.table, "pref", "100")


def wait_handshake(timeout=10.0):
    """Sends a ping through the tunnel and waits for the handshake to complete."""
    ch = topo.CHANNEL
    cn = topo.netns("client")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ns(cn, "ping", "-c1", "-W1", "-I", ch.client_v4, ch.provider_v4, check=False)
        if latest_handshake("client") > 0:
            return
    raise LabError("WireGuard handshake did not complete within "
                   f"{timeout:.0f}s: {state.read_log('wireguard-go-client')[-1000:]}")


def latest_handshake(host):
    ifname = topo.CHANNEL.client_if if host == "client" else topo.CHANNEL.provider_if
    out = ns(topo.netns(host), "wg", "show", ifname, "latest-handshakes", check=False)
    stamps = [int(line.split()[1]) for line in out.splitlines() if len(line.split()) == 2]
    return max(stamps, default=0)


def set_full_vpn(on):
    """wg-quick's full-tunnel rules: everything not marked as WireGuard's own packets
    uses the tunnel's table; the main table still serves non-default routes."""
    ch = topo.CHANNEL
    cn = topo.netns("client")
    for fam in ("-4", "-6"):
        rules = [["not", "fwmark", str(ch.fwmark), "lookup", str(ch.table), "pref", "110"],
                 ["lookup", "main", "suppress_prefixlength", "0", "pref", "105"]]
        for r in rules:
            run("ip", "-n", cn, fam, "rule", "del", *r, check=False)
            if on:
                run("ip", "-n", cn, fam, "rule", "add", *r)


def full_vpn_enabled():
    out = run("ip", "-n", topo.netns("client"), "-4", "rule", "show", "pref", "110", check=False)
    return "lookup" in out


def remove_stale_sockets():
    """Removes our interfaces' UAPI sockets. Called by down after our wireguard-go
    processes are gone; a socket left then is stale (a killed process cannot unlink it)."""
    for ifname in (topo.CHANNEL.client_if, topo.CHANNEL.provider_if):
        sock = os.path.join(UAPI_DIR, f"{ifname}.sock")
        if os.path.exists(sock):
            os.unlink(sock)
