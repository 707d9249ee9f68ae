"""Namespaces, veths, addresses, routes and the provider's NAT."""
import os

from . import state
from . import topology as topo
from .shell import run, ns


def existing():
    """The lab's namespaces that exist now (only the names the topology defines)."""
    names = {line.split()[0] for line in run("ip", "netns", "list").splitlines() if line.strip()}
    return [topo.netns(h) for h in topo.HOSTS if topo.netns(h) in names]


def create_hosts():
    for host in topo.HOSTS:
        n = topo.netns(host)
        run("ip", "netns", "add", n)
        run("ip", "-n", n, "link", "set", "lo", "up")
        forward = "1" if host in topo.ROUTERS else "0"
        ns(n, "sysctl", "-qw", f"net.ipv4.ip_forward={forward}",
           f"net.ipv6.conf.all.forwarding={forward}",
           "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0",
           "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")


def create_links():
    for l in topo.LINKS:
        na, nb = topo.netns(l.a), topo.netns(l.b)
        # Created inside a's namespace with the peer placed in b's: never in the root one.
        run("ip", "-n", na, "link", "add", l.a_if, "type", "veth", "peer", "name", l.b_if,
            "netns", nb)
        for n, ifname, ids in ((na, l.a_if, l.a_ids), (nb, l.b_if, l.b_ids)):
            for i in ids:
                run("ip", "-n", n, "addr", "add", f"{l.v4(i)}/24", "dev", ifname)
                run("ip", "-n", n, "-6", "addr", "add", f"{l.v6(i)}/64", "dev", ifname, "nodad")
            run("ip", "-n", n, "link", "set", ifname, "up")


def create_routes():
    for host, dst4, via4, dst6, via6 in topo.ROUTES:
        n = topo.netns(host)
        run("ip", "-n", n, "route", "add", dst4, "via", via4)
        run("ip", "-n", n, "-6", "route", "add", dst6, "via", via6)


def resolve_neighbours():
    """Pings across every link, both ways, v4 and v6, every address, so that every
    neighbour entry is resolved before traffic starts. A first IPv6 neighbour resolution
    sometimes took a second here (the retransmit timer): without this, the first packets
    of a test could stall for a second. The pings run in parallel."""
    import subprocess
    procs = []
    for l in topo.LINKS:
        for src, dst_ids in ((l.a, l.b_ids), (l.b, l.a_ids)):
            for i in dst_ids:
                for dst in (l.v4(i), l.v6(i)):
                    procs.append(subprocess.Popen(
                        ["ip", "netns", "exec", topo.netns(src), "ping", "-n", "-q", "-c1", "-W3", dst],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    failed = sum(1 for p in procs if p.wait() != 0)
    if failed:
        from .shell import LabError
        raise LabError(f"{failed} of {len(procs)} link neighbours did not answer a ping")


NAT_RULES = """
table inet qslab_nat {{
  chain postrouting {{
    type nat hook postrouting priority srcnat; policy accept;
    oifname "{uplink}" ip saddr {net4} masquerade
    oifname "{uplink}" ip6 saddr {net6} masquerade
  }}
}}
"""


def create_provider_nat():
    """The provider masquerades tunnel traffic (v4 and v6) out of its uplink, as a
    commercial VPN does: servers see the provider's address."""
    ch = topo.CHANNEL
    uplink = topo.link("provider").a_if
    ns(topo.netns("provider"), "nft", "-f", "-",
       input=NAT_RULES.format(uplink=uplink, net4=ch.net_v4, net6=ch.net_v6))


def kill_namespace_processes(netns):
    """Kills every process inside one of our namespaces (by PID, as listed by
    `ip netns pids`): daemons and anything a test started there."""
    pids = [int(p) for p in run("ip", "netns", "pids", netns, check=False).split()]
    for sig in (15, 9):
        alive = []
        for pid in pids:
            try:
                os.kill(pid, sig)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return
        pids = _wait_gone(alive)
        if not pids:
            return


def _wait_gone(pids, timeout=2.0):
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in pids if state.alive(p)]
        if not pids:
            return []
        time.sleep(0.05)
    return pids


def delete_all():
    """Removes every lab namespace (and with it its veths, tc and nft state)."""
    for n in existing():
        kill_namespace_processes(n)
        run("ip", "netns", "delete", n, check=False)

