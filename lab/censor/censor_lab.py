"""censorctl: start, stop and read censord in the lab's censor namespace (qs-censor).

  lab/censor/censorctl start [--blocklist FILE] [-- CENSORD_OPTIONS...]
  lab/censor/censorctl stop
  lab/censor/censorctl status | stats | log

`start` installs the kernel side in qs-censor, for IPv4 and IPv6 (iptables-nft: this kernel
has no nft `queue` expression):
  mangle FORWARD -> chain QS_CENSOR: udp and tcp -> NFQUEUE --queue-num 7 --queue-bypass
  filter FORWARD -> chain QS_CENSOR_DROP: mark 0xc3c3 -> DROP
censord accepts a packet to drop with that mark (its nfqueue frontend, shared with
quicstepd, sets marks). --queue-bypass makes the censor fail open, as a real one does: with
no censord listening, traffic passes uncensored.

State lives in /run/qs-censor (pid file, log, decisions.jsonl, stats.json, blocklist).
`stop` ends censord by its recorded PID (after checking /proc/PID/cmdline names censord),
with SIGTERM, then removes the rules; it also cleans up after a crash. `qslab down` deletes
the namespace, and with it the rules and the process.

Also importable (the lab tests use start/stop/stats/decisions).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NETNS = os.environ.get("QS_CENSOR_NETNS", "qs-censor")  # the lab's censor router
STATE_DIR = "/run/qs-censor"
QUEUE = 7
DROP_MARK = 0xC3C3
CHAIN = "QS_CENSOR"
DROP_CHAIN = "QS_CENSOR_DROP"
DEFAULT_BLOCKLIST = "# the lab's default blocklist\n.blocked.test\n"
_child = None  # the Popen of the censord this process started


class CensorError(RuntimeError):
    pass


def path(name):
    return os.path.join(STATE_DIR, name)


def find_censord():
    if os.environ.get("CENSORD"):
        return os.environ["CENSORD"]
    for build in ("release", "asan"):
        p = os.path.join(REPO, "build", build, "lab", "censor", "censord")
        if os.path.exists(p):
            return p
    raise CensorError("censord not built (cmake --build BUILD --target censord, or set CENSORD)")


def _ns(*cmd, check=True):
    res = subprocess.run(["ip", "netns", "exec", NETNS, *cmd], capture_output=True, text=True)
    if check and res.returncode != 0:
        raise CensorError(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return res


def install_rules(queue=QUEUE, drop_mark=DROP_MARK):
    remove_rules()
    for ipt in ("iptables-nft", "ip6tables-nft"):
        _ns(ipt, "-t", "mangle", "-N", CHAIN)
        for proto in ("udp", "tcp"):
            _ns(ipt, "-t", "mangle", "-A", CHAIN, "-p", proto, "-j", "NFQUEUE",
                "--queue-num", str(queue), "--queue-bypass")
        _ns(ipt, "-t", "mangle", "-I", "FORWARD", "-j", CHAIN)
        _ns(ipt, "-t", "filter", "-N", DROP_CHAIN)
        _ns(ipt, "-t", "filter", "-A", DROP_CHAIN, "-m", "mark", "--mark", hex(drop_mark), "-j", "DROP")
        _ns(ipt, "-t", "filter", "-I", "FORWARD", "-j", DROP_CHAIN)


def remove_rules():
    """Removes what install_rules added; absent pieces (or namespace) are not errors."""
    for ipt in ("iptables-nft", "ip6tables-nft"):
        for table, chain in (("mangle", CHAIN), ("filter", DROP_CHAIN)):
            while _ns(ipt, "-t", table, "-D", "FORWARD", "-j", chain, check=False).returncode == 0:
                pass
            _ns(ipt, "-t", table, "-F", chain, check=False)
            _ns(ipt, "-t", table, "-X", chain, check=False)


def _running_pid():
    try:
        with open(path("censord.pid")) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError):
        return None
    if any(os.path.basename(a.decode(errors="replace")) == "censord" for a in argv[:6]):
        return pid
    return None


def start(extra_args=(), blocklist_text=DEFAULT_BLOCKLIST, binary=None, timeout=10):
    """Installs the rules and starts censord; returns its PID once it is reading its queue
    (its stats file names its PID). Raises CensorError, leaving nothing behind."""
    stop()
    os.makedirs(STATE_DIR, exist_ok=True)
    for name in ("stats.json", "decisions.jsonl", "censord.log"):
        try:
            os.unlink(path(name))
        except FileNotFoundError:
            pass
    with open(path("blocklist.txt"), "w") as f:
        f.write(blocklist_text)
    binary = binary or find_censord()
    install_rules()
    argv = ["ip", "netns", "exec", NETNS, binary, "--blocklist", path("blocklist.txt"),
            "--queue", str(QUEUE), "--drop-mark", str(DROP_MARK), "--log", path("decisions.jsonl"),
            "--stats", path("stats.json"), *extra_args]
    with open(path("censord.log"), "w") as log:
        # ip netns exec execs the program: the child's PID is censord's.
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    global _child
    _child = proc
    with open(path("censord.pid"), "w") as f:
        f.write(f"{proc.pid}\n")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            remove_rules()
            raise CensorError(f"censord exited with {proc.returncode}: {read_log()[-2000:]}")
        if stats().get("pid") == proc.pid:
            return proc.pid
        time.sleep(0.05)
    stop()
    raise CensorError("censord did not start: " + read_log()[-2000:])


def stop(timeout=10):
    """Stops censord (SIGTERM, then SIGKILL after `timeout` s) by its recorded PID and removes
    the rules. Returns censord's exit code when this process started it, else None."""
    global _child
    pid = _running_pid()
    code = None
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        if _child is not None and _child.pid == pid:
            try:
                code = _child.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                _child.wait(5)
        else:
            deadline = time.time() + timeout
            while time.time() < deadline and _running_pid() == pid:
                time.sleep(0.05)
            if _running_pid() == pid:
                os.kill(pid, signal.SIGKILL)
    _child = None
    try:
        os.unlink(path("censord.pid"))
    except FileNotFoundError:
        pass
    if os.path.exists(f"/var/run/netns/{NETNS}"):
        remove_rules()
    return code


def stats():
    try:
        with open(path("stats.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def fresh_stats(timeout=3):
    """The counters as censord writes them next (it rewrites the file every second)."""
    since = time.time()
    deadline = since + timeout
    while time.time() < deadline:
        try:
            if os.stat(path("stats.json")).st_mtime > since:
                return stats()
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    return stats()


def decisions():
    out = []
    try:
        with open(path("decisions.jsonl")) as f:
            for line in f:
                if line.strip():
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def read_log():
    try:
        with open(path("censord.log")) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def main(argv=None):
    p = argparse.ArgumentParser(prog="censorctl", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start", help="install rules, start censord (options after --)")
    s.add_argument("--blocklist", help="blocklist file (default: .blocked.test)")
    s.add_argument("censord_args", nargs=argparse.REMAINDER)
    for name in ("stop", "status", "stats", "log"):
        sub.add_parser(name)
    a = p.parse_args(argv)
    try:
        if a.cmd == "start":
            text = DEFAULT_BLOCKLIST
            if a.blocklist:
                with open(a.blocklist) as f:
                    text = f.read()
            extra = a.censord_args[1:] if a.censord_args[:1] == ["--"] else a.censord_args
            print(f"censord running, pid {start(extra, text)}; state in {STATE_DIR}")
        elif a.cmd == "stop":
            stop()
        elif a.cmd == "status":
            pid = _running_pid()
            print(f"censord: running, pid {pid}" if pid else "censord: not running")
        elif a.cmd == "stats":
            json.dump(stats(), sys.stdout, indent=2)
            print()
        elif a.cmd == "log":
            for d in decisions():
                print(json.dumps(d))
    except CensorError as e:
        print(f"censorctl: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
