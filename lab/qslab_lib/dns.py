"""The lab DNS server (dnsmasq in qs-dns) and the client's resolver.

dnsmasq answers only the lab's names (A and AAAA, from topology.DNS_NAMES), forwards
nothing (--no-resolv) and logs every query with its source address, so a test can tell
whether a query came through the channel (source: the provider's address) or natively.
The client's resolver is set with /etc/netns/qs-client/resolv.conf, which
`ip netns exec` bind-mounts over /etc/resolv.conf.
"""
import os
import shutil
import time

from . import state
from . import topology as topo
from .shell import LabError, ns

RESOLV_DIR = f"/etc/netns/{topo.netns('client')}"


def up(procs):
    argv = ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
            "--conf-file=/dev/null", "--bind-interfaces", "--user=root",
            f"--listen-address={topo.DNS_V4}", f"--listen-address={topo.DNS_V6}",
            "--except-interface=lo", "--log-queries=extra",
            f"--log-facility={state.path('logs', 'dnsmasq-queries.log')}",
            f"--pid-file={state.path('dnsmasq.pid')}"]
    for name, srv in topo.DNS_NAMES.items():
        argv.append(f"--host-record={name},{srv.v4},{srv.v6}")
    proc = state.start_daemon("dnsmasq", topo.netns(topo.DNS_HOST), argv)
    procs.append(proc)
    os.makedirs(RESOLV_DIR, exist_ok=True)
    with open(os.path.join(RESOLV_DIR, "resolv.conf"), "w") as f:
        f.write(f"# written by lab/qslab\nnameserver {topo.DNS_V4}\nnameserver {topo.DNS_V6}\n")
    # Ready when it answers locally.
    for _ in range(50):
        state.check_alive(proc, "dnsmasq")
        out = ns(topo.netns(topo.DNS_HOST), "dig", "+short", "+time=1", "+tries=1",
                 f"@{topo.DNS_V4}", "open.test", "A", check=False)
        if out.strip():
            return
        time.sleep(0.1)
    raise LabError("dnsmasq does not answer: " + state.read_log("dnsmasq")[-1000:])


def down():
    shutil.rmtree(RESOLV_DIR, ignore_errors=True)
    try:
        os.rmdir("/etc/netns")  # only when empty: other tools may use it
    except OSError:
        pass


def queries_log():
    try:
        with open(state.path("logs", "dnsmasq-queries.log")) as f:
            return f.read()
    except FileNotFoundError:
        return ""
