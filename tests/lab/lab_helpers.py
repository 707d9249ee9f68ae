"""Helpers for the lab integration tests: run qslab, read its JSON, run commands in hosts.
Everything about the lab is found from `qslab status --json`, never hard-coded."""
import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QSLAB = os.path.join(REPO, "lab", "qslab")
sys.path.insert(0, os.path.join(REPO, "lab"))
from qslab_lib import peers  # noqa: E402,F401  (certificates, chromium command lines)


def require_root(test):
    """CI runs as root: a lab test that cannot run there must fail, not skip."""
    if os.geteuid() != 0:
        test.fail("lab integration tests need root (network namespaces); CI runs them as root")


def qslab(*args, env=None, check=True, timeout=120):
    res = subprocess.run([QSLAB, *args], capture_output=True, text=True, timeout=timeout,
                         env=dict(os.environ, **(env or {})))
    if check and res.returncode != 0:
        raise AssertionError(f"qslab {' '.join(args)} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def status():
    return json.loads(qslab("status", "--json").stdout)


def in_host(lab, host, *cmd, check=True, timeout=60):
    res = subprocess.run(["ip", "netns", "exec", lab["hosts"][host]["netns"], *cmd],
                         capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"[{host}] {' '.join(cmd)} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def ping_rtts(lab, host, dst, count=10, interval=0.2, source=None):
    cmd = ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "3"]
    if source:
        cmd += ["-I", source]
    out = in_host(lab, host, *cmd, dst, timeout=count * interval + 30).stdout
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]


def lab_daemon_pid(name):
    """The PID that qslab recorded for one of its daemons (state dir pids/<name>.pid, e.g.
    "wireguard-go-client"), or None."""
    state_dir = os.environ.get("QSLAB_STATE_DIR", "/run/qslab")
    try:
        with open(os.path.join(state_dir, "pids", f"{name}.pid")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def pid_alive(pid):
    """True while `pid` runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def ancestors(pid=None):
    """pid (this process by default) and its ancestors, by /proc/PID/stat's parent field: a
    lab test started under a wrapper (flock, timeout) must not wait for the wrapper."""
    found, pid = set(), os.getpid() if pid is None else pid
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


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

