"""Helpers for the lab integration tests: run qslab, read its JSON, run commands in hosts.
Everything about the lab is found from `qslab status --json`, never hard-coded."""
import os
import re

# What the lab tests share with the tools lives in qs_support; re-exported for the tests.
from qs_support.lab import ancestors, down, in_host, qslab, status  # noqa: F401
from qs_support.lab import daemon_pid as lab_daemon_pid  # noqa: F401
from qs_support.procs import alive as pid_alive  # noqa: F401


def require_root(test):
    """CI runs as root: a lab test that cannot run there must fail, not skip."""
    if os.geteuid() != 0:
        test.fail("lab integration tests need root (network namespaces); CI runs them as root")


def ping_rtts(lab, host, dst, count=10, interval=0.2, source=None):
    cmd = ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "3"]
    if source:
        cmd += ["-I", source]
    out = in_host(lab, host, *cmd, dst, timeout=count * interval + 30).stdout
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]


def live_lab_processes():
    """The lab's daemons still running, recognised by their program name (argv[0]) and
    arguments: wireguard-go on a qsw- interface, qs_delay_line, dnsmasq with the lab's
    state dir. For leak checks only."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            with open(f"/proc/{pid}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        if zombie or not argv:
            continue
        prog = os.path.basename(argv[0])
        if (prog == "qs_delay_line"
                or (prog == "wireguard-go" and any(a.startswith("qsw-") for a in argv[1:]))
                or (prog == "dnsmasq" and any("qslab" in a for a in argv[1:]))):
            found.append(f"{pid}: {' '.join(argv)}")
    return found

