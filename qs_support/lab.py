"""The shared lab (lab/qslab) as the tests and tools use it: qslab's commands, its JSON
description, commands inside its hosts, and waiting while another lab user holds it. Its
namespace names are fixed, so one lab user at a time."""
import json
import os
import subprocess
import sys
import time

from qs_support import binaries

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QSLAB = os.path.join(REPO, "lab", "qslab")
# The lab's own daemons: processes of these names inside its namespaces are not another user.
LAB_DAEMONS = {"wireguard-go", "dnsmasq", "qs_delay_line"}


def qslab(*args, env=None, check=True, timeout=120):
    """Runs lab/qslab. With QS_BUILD set (CTest sets it), the lab's delay line is that
    build's (QSLAB_DELAY_LINE, unless already set)."""
    full_env = dict(os.environ, **(env or {}))
    if os.environ.get("QS_BUILD") and "QSLAB_DELAY_LINE" not in full_env:
        full_env["QSLAB_DELAY_LINE"] = binaries.path("qs_delay_line")
    res = subprocess.run([QSLAB, *args], capture_output=True, text=True, timeout=timeout,
                         env=full_env)
    if check and res.returncode != 0:
        raise AssertionError(f"qslab {' '.join(args)} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def status():
    """`qslab status --json`: everything about the running lab (never hard-code it)."""
    return json.loads(qslab("status", "--json").stdout)


def in_host(lab, host, *cmd, check=True, timeout=60):
    res = subprocess.run(["ip", "netns", "exec", lab["hosts"][host]["netns"], *cmd],
                         capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"[{host}] {' '.join(cmd)} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def daemon_pid(name):
    """The PID qslab recorded for one of its daemons (pids/<name>.pid in its state dir, e.g.
    "wireguard-go-client"), or None."""
    state_dir = os.environ.get("QSLAB_STATE_DIR", "/run/qslab")
    try:
        with open(os.path.join(state_dir, "pids", f"{name}.pid")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def ancestors(pid=None):
    """pid (this process by default) and its ancestors, by /proc/PID/stat's parent field: a
    lab user started under a wrapper (flock, timeout, ctest) must not wait for the wrapper."""
    found, pid = set(), os.getpid() if pid is None else pid
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def busy():
    """Why the shared lab is in use by someone else, or "" when it is idle: another lab test
    or tool (by its command line), or any process other than the lab's own daemons inside
    one of the project's namespaces (qs-*: another engineer's daemon or benchmark)."""
    mine = ancestors()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in mine:
            continue
        cmd = " ".join(_cmdline(pid))
        if ("unittest" in cmd and ("test_lab" in cmd or "test_quicstepd" in cmd)) or \
                "make_captures.sh" in cmd or "lab.demo" in cmd:
            return f"pid {pid}: {cmd[:120]}"
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for ns in (n for n in names if n.startswith("qs-")):  # the project's namespaces
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
        for pid in pids:
            argv = _cmdline(pid)
            if argv and os.path.basename(argv[0]) not in LAB_DAEMONS:
                return f"{ns}: pid {pid}: {' '.join(argv)[:120]}"
    return ""


def wait_idle(timeout=900):
    """Waits while another lab user holds the lab; AssertionError after `timeout` s."""
    deadline = time.time() + timeout
    why = busy()
    if why:
        print(f"waiting for the lab: {why}", file=sys.stderr, flush=True)
    while why and time.time() < deadline:
        time.sleep(3)
        why = busy()
    if why:
        raise AssertionError(f"the lab stayed busy: {why}")


def down(failed=False, timeout=120):
    """`qslab down`; when `failed`, first copies the lab's daemon logs (wireguard-go,
    dnsmasq, the delay line: the state dir's logs/) into the artifacts folder."""
    if failed:
        from qs_support import artifacts
        state_dir = os.environ.get("QSLAB_STATE_DIR", "/run/qslab")
        logs = os.path.join(state_dir, "logs")
        if os.path.isdir(logs):
            import shutil
            dest = artifacts.work_dir("qslab-logs-")
            shutil.copytree(logs, dest, dirs_exist_ok=True)
            artifacts.finish(dest, failed=True)
    return qslab("down", check=False, timeout=timeout)
