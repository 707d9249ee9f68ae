"""Helpers for the censor's lab tests: waiting for the shared lab, test servers in srv1,
clients in the client namespace, captures. Processes are tracked and ended by PID only."""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))
sys.path.insert(0, os.path.join(REPO, "lab", "censor"))
import lab_helpers  # noqa: E402,F401  (qslab, status, in_host, require_root)
import censor_lab  # noqa: E402,F401

LAB_DAEMONS = {"wireguard-go", "dnsmasq", "qs_delay_line"}
WORK = "/tmp/qs-censor-test"
BIG_SIZE = 5 * 1000 * 1000  # htdocs/big.bin: long enough to run on the native path


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def lab_busy():
    """Why the shared lab is in use by someone else, or "" when it is idle: another lab test
    (by its command line), or any process other than the lab's own daemons inside the lab's
    namespaces (another engineer's daemon or benchmark)."""
    mine = lab_helpers.ancestors()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in mine:
            continue
        cmd = " ".join(_cmdline(pid))
        if ("unittest" in cmd and ("test_lab" in cmd or "test_quicstepd" in cmd)) or \
                "make_captures.sh" in cmd or "lab/demo.py" in cmd:
            return f"pid {pid}: {cmd[:120]}"
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for ns in (n for n in names if n.startswith("qs-")):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            argv = _cmdline(pid)
            if argv and os.path.basename(argv[0]) not in LAB_DAEMONS:
                return f"{ns}: pid {pid}: {' '.join(argv)[:120]}"
    return ""


def wait_lab_idle(timeout=900):
    deadline = time.time() + timeout
    why = lab_busy()
    if why:
        print(f"waiting for the lab: {why}", file=sys.stderr, flush=True)
    while why and time.time() < deadline:
        time.sleep(3)
        why = lab_busy()
    if why:
        raise AssertionError(f"the lab stayed busy: {why}")


class Procs:
    """Background processes in namespaces, ended by PID (SIGTERM, then SIGKILL)."""

    def __init__(self):
        self.procs = []

    def start(self, netns, argv, log_path, **kw):
        with open(log_path, "w") as log:
            p = subprocess.Popen(["ip", "netns", "exec", netns, *argv], stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=5):
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
                p.wait(timeout)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(5)
        if p in self.procs:
            self.procs.remove(p)

    def stop_all(self):
        for p in list(reversed(self.procs)):
            self.stop(p)


def wait_listening(netns, proto, port, proc, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        out = subprocess.run(["ip", "netns", "exec", netns, "ss", f"-Hln{proto}", f"sport = :{port}"],
                             capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listening on {proto} {port} in {netns}")


def make_site(workdir):
    """htdocs with index.html, a certificate for localhost and the lab names; returns
    (htdocs, key, cert, spki) — spki for chromium's --ignore-certificate-errors-spki-list."""
    htdocs = os.path.join(workdir, "htdocs")
    os.makedirs(htdocs, exist_ok=True)
    with open(os.path.join(htdocs, "index.html"), "w") as f:
        f.write("<html><body><p>censor test page</p></body></html>\n")
    with open(os.path.join(htdocs, "big.bin"), "wb") as f:
        f.write(os.urandom(BIG_SIZE))
    key, cert, spki = lab_helpers.peers.make_certificate(workdir)
    return htdocs, key, cert, spki


def chromium_fetch(workdir, name, url, spki, flags, timeout=20):
    """Loads url in the client namespace; returns (ok, seconds, dom)."""
    home = os.path.join(workdir, f"chrome-{name}")
    os.makedirs(home, exist_ok=True)
    argv = ["ip", "netns", "exec", "qs-client",
            *lab_helpers.peers.chromium_command(home, spki, url, timeout, flags)]
    t0 = time.time()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 10)
    return "censor test page" in res.stdout, time.time() - t0, res.stdout


def gtlsclient_fetch(workdir, name, host, timeout=8, resource="index.html", size=None):
    """gtlsclient fetches /resource from host:443 (a name: it resolves through the client's
    resolver and sends it as SNI); returns (ok, seconds). With `size`, ok means the file
    arrived whole; else that it is the test page."""
    out = os.path.join(workdir, f"dl-{name}")
    os.makedirs(out, exist_ok=True)
    argv = ["ip", "netns", "exec", "qs-client", "timeout", "-k", "2", str(timeout), "gtlsclient", "--quiet",
            "--exit-on-all-streams-close", f"--download={out}", host, "443", f"https://{host}/{resource}"]
    t0 = time.time()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 10)
    path = os.path.join(out, resource)
    ok = False
    if size is not None:
        ok = os.path.exists(path) and os.path.getsize(path) == size
    elif res.returncode == 0 and os.path.exists(path):
        with open(path) as f:
            ok = "censor test page" in f.read()
    return ok, time.time() - t0


def curl_fetch(host, resolve=None, timeout=8):
    """HTTPS over TCP with curl in the client namespace; returns (ok, exit code, stderr)."""
    argv = ["ip", "netns", "exec", "qs-client", "curl", "-4", "-sS", "-k", "--max-time", str(timeout)]
    if resolve:
        argv += ["--resolve", f"{host}:443:{resolve}"]
    res = subprocess.run(argv + [f"https://{host}/"], capture_output=True, text=True, timeout=timeout + 10)
    return res.returncode == 0 and "s_server" in res.stdout, res.returncode, res.stderr.strip()


def dig(name, qtype="A"):
    res = subprocess.run(["ip", "netns", "exec", "qs-client", "dig", "+short", "+time=2", "+tries=1",
                          name, qtype], capture_output=True, text=True, timeout=15)
    return res.stdout.split()
