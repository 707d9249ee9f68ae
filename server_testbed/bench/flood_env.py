"""Throwaway namespaces and process helpers of the flood benchmark and its smoke test (root).

Topology (names and addresses reserved for the flood work; nothing else uses them):
  qs-fld-c  qsfl-c  198.18.230.2, 2001:db8:230::2   legitimate client and attacker
      |  veth (no qdisc limits: the flood meets the server's own limits, not the link's)
  qs-fld-s  qsfl-s  198.18.230.10, 2001:db8:230::10  server, gate, quicstep-https
Spoofed sources come from 198.18.232.0/22 and 2001:db8:232::/64. The server routes those
prefixes back to qs-fld-c, which does not forward: its answers to the attacker (Retries,
handshakes, SYN-ACKs) are dropped there, like a blackhole. Everything is removed by name in
down(); processes are ended by PID.
"""
import json
import os
import shutil
import signal
import time

from qs_support import artifacts, certs, procs
from qs_support.netns import sh, netns, remove_namespaces, create_veth_pair  # noqa: F401
from qs_support.procs import cpu_seconds, wait_file, wait_text  # noqa: F401

NS_S, NS_C = "qs-fld-s", "qs-fld-c"
IF_S, IF_C = "qsfl-s", "qsfl-c"
S4, S6 = "198.18.230.10", "2001:db8:230::10"
C4, C6 = "198.18.230.2", "2001:db8:230::2"
SPOOF4, SPOOF6 = "198.18.232.0/22", "2001:db8:232::/64"


def down():
    remove_namespaces(NS_S, NS_C)


def up():
    down()
    create_veth_pair(NS_S, IF_S, ((S4,), (S6,)), NS_C, IF_C, ((C4,), (C6,)),
                     sysctls=("net.ipv4.conf.all.rp_filter=0",
                              "net.ipv4.conf.{ifc}.rp_filter=0"))
    sh("ip", "-n", NS_S, "route", "add", SPOOF4, "via", C4)
    sh("ip", "-n", NS_S, "-6", "route", "add", SPOOF6, "via", C6)
    for ns in (NS_S, NS_C):  # the attacker's spoofed sources must not be forwarded anywhere
        netns(ns, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        netns(ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=0")
    # Neighbours resolved before any flood: a raw-socket burst towards an unresolved
    # neighbour is mostly dropped (only unres_qlen packets wait), and IPv6 needs the
    # link-local addresses through DAD first.
    for address in (S4, S6):
        deadline = time.time() + 10
        while netns(NS_C, "ping", "-c1", "-W1", address, check=False).returncode != 0:
            if time.time() > deadline:
                raise RuntimeError(f"{NS_C} cannot reach {address}")
            time.sleep(0.2)


def make_cert(workdir):
    """A throwaway certificate for localhost: returns (cert, key)."""
    key, cert, _ = certs.make_certificate(workdir, names=("localhost",))
    return cert, key


class Proc:
    """A long-running process in a namespace, pinned with taskset, its stdout kept for its
    final counters; ended by PID (qs_support/procs.py). mark() and cpu_share() measure the
    share of a core it used in between."""

    def __init__(self, ns, cpus, cmd, log_path, nice=0, cwd=None):
        self.proc = procs.start(ns, cmd, log_path, cpus=cpus, nice=nice, capture_stdout=True,
                                new_session=False, cwd=cwd)
        self.meter = procs.CpuMeter(self.proc.pid)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def poll(self):
        return self.proc.poll()

    def mark(self):
        self.meter.mark()

    def cpu_share(self):
        """Share of one core used since mark() (1.0 = a whole core)."""
        return self.meter.share()

    def stop(self, timeout=10):
        """SIGINT, wait; returns (exit code, stdout). Kills it if it does not stop."""
        code = procs.stop(self.proc, signal.SIGINT, timeout)
        return code, self.proc.output or ""


def last_json(text):
    lines = [l for l in text.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def quota_period_us(share, period_us=10000):
    """The CFS period for `share` of a core: `period_us`, longer where the quota would fall
    below the kernel's 1 ms minimum (share 0.05: 20 ms), so the share is what is asked."""
    return max(period_us, int(1000 / share + 0.5)) if share > 0 else period_us


class CpuQuota:
    """A CPU-bandwidth cgroup that throttles one process to `share` of a core (capacity mode).

    cgroup v2 (`cpu.max`) where the unified hierarchy has the cpu controller, else cgroup v1's
    cpu controller (`cpu.cfs_quota_us`; this VM mounts a hybrid hierarchy whose v2 part has no
    controllers). Created under the name given (qs-fld-*), removed by remove()."""

    def __init__(self, name, share, period_us=10000):
        self.period_us = quota_period_us(share, period_us)
        self.quota_us = max(1000, int(share * self.period_us))
        v2 = "/sys/fs/cgroup"
        self.version = None
        try:
            with open(os.path.join(v2, "cgroup.controllers")) as f:
                if "cpu" in f.read().split():
                    self.version, self.path = 2, os.path.join(v2, name)
        except OSError:
            pass
        if self.version is None:
            v1 = "/sys/fs/cgroup/cpu"
            if not os.path.exists(os.path.join(v1, "cpu.cfs_quota_us")):
                raise RuntimeError("no cgroup cpu controller (neither /sys/fs/cgroup/cpu.max "
                                   "nor /sys/fs/cgroup/cpu/cpu.cfs_quota_us)")
            self.version, self.path = 1, os.path.join(v1, name)
        self.remove()
        if self.version == 2:
            with open(os.path.join(v2, "cgroup.subtree_control"), "w") as f:
                f.write("+cpu")
        os.mkdir(self.path)
        if self.version == 2:
            self._write("cpu.max", f"{self.quota_us} {self.period_us}")
        else:
            self._write("cpu.cfs_period_us", str(self.period_us))
            self._write("cpu.cfs_quota_us", str(self.quota_us))

    @property
    def share(self):
        return self.quota_us / self.period_us

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def add(self, pid):
        """Moves the process (all its threads) into the group."""
        self._write("cgroup.procs", str(pid))

    def throttled(self):
        """(periods, throttled periods) from cpu.stat: proof the quota was the limit."""
        stat = {}
        try:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, v = line.split()
                    stat[k] = int(v)
        except OSError:
            return 0, 0
        return stat.get("nr_periods", 0), stat.get("nr_throttled", 0)

    def remove(self):
        """Moves any process left back to the parent group and removes the group."""
        if not os.path.isdir(self.path):
            return
        parent = os.path.dirname(self.path)
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                pids = f.read().split()
            for pid in pids:
                try:
                    with open(os.path.join(parent, "cgroup.procs"), "w") as f:
                        f.write(pid)
                except OSError:
                    pass
        except OSError:
            pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"cannot remove cgroup {self.path}")


def tempdir():
    """A work directory (under QS_TEST_ARTIFACTS when a test runs: qs_support/artifacts.py)."""
    return artifacts.work_dir("qs-fld-")


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)
