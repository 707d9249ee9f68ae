"""Throwaway namespace pairs for lab tests and benchmarks that do not use the shared lab.

Each caller (server_testbed/bench/srvt_env.py, tests/probe/prb_env.py,
server_testbed/bench/flood_env.py, measurement/scan/lab_population.py) keeps its own names,
addresses and topology; this module holds only the steps they share: running a command (in a
namespace), removing namespaces by name after killing the processes inside them by PID, and a
veth pair between two new namespaces with the addresses each side gets.
"""
import os
import signal
import subprocess


def sh(*cmd, check=True, timeout=30, input=None):
    """Runs a command; returns the CompletedProcess (text stdout/stderr captured)."""
    return subprocess.run(list(cmd), check=check, timeout=timeout, input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def netns(ns, *cmd, **kw):
    """Runs a command inside namespace `ns` (see sh)."""
    return sh("ip", "netns", "exec", ns, *cmd, **kw)


def remove_namespaces(*names):
    """SIGKILLs every process `ip netns pids` lists in each namespace, then deletes it.
    Namespaces that do not exist are skipped silently."""
    for ns in names:
        for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        sh("ip", "netns", "del", ns, check=False)


def create_veth_pair(ns_a, if_a, addrs_a, ns_b, if_b, addrs_b, sysctls=()):
    """Creates namespaces ns_a and ns_b joined by a veth (if_a in ns_a, if_b in ns_b).

    addrs_a / addrs_b are (IPv4 addresses, IPv6 addresses) of each side: IPv4 as /24, IPv6
    as /64 without DAD. Each side gets lo up, router advertisements off, then every sysctl
    of `sysctls` (format strings where {ifc} is that side's interface), then its addresses,
    and its interface up."""
    sh("ip", "netns", "add", ns_a)
    sh("ip", "netns", "add", ns_b)
    sh("ip", "link", "add", if_b, "netns", ns_b, "type", "veth", "peer", "name", if_a,
       "netns", ns_a)
    for ns, ifc, (a4s, a6s) in ((ns_a, if_a, addrs_a), (ns_b, if_b, addrs_b)):
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        netns(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifc}.accept_ra=0")
        for setting in sysctls:
            netns(ns, "sysctl", "-qw", setting.format(ifc=ifc))
        for a in a4s:
            sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", ifc)
        for a in a6s:
            sh("ip", "-n", ns, "-6", "addr", "add", f"{a}/64", "dev", ifc, "nodad")
        sh("ip", "-n", ns, "link", "set", ifc, "up")
