"""Helpers for the censor's lab tests: waiting for the shared lab, test servers in srv1,
clients in the client namespace, captures. Processes are tracked and ended by PID only."""
import os
import signal
import subprocess
import time

from lab.censor import censor_lab  # noqa: F401
from qs_support import artifacts, binaries, certs, chromium, procs
from qs_support.lab import wait_idle as wait_lab_idle  # noqa: F401
from tests.lab import lab_helpers  # noqa: F401  (qslab, status, in_host, require_root)

# censor_lab (lab/censor/censorctl's library) runs the censord of the build under test.
os.environ.setdefault("CENSORD", binaries.path("censord"))
# The tests' work directories: kept when a test fails (qs_support/artifacts.py).
WORK = os.path.join(artifacts.root() or "/tmp", "qs-censor-test")
BIG_SIZE = 5 * 1000 * 1000  # htdocs/big.bin: long enough to run on the native path


class Procs(procs.Procs):
    """Background processes in namespaces, ended by PID (SIGTERM, then SIGKILL)."""

    def stop(self, p, sig=signal.SIGTERM, timeout=5):
        return super().stop(p, sig, timeout)

    def stop_all(self, sig=signal.SIGTERM):
        super().stop_all(sig)


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
    key, cert, spki = certs.make_certificate(workdir)
    return htdocs, key, cert, spki


def chromium_fetch(workdir, name, url, spki, flags, timeout=20):
    """Loads url in the client namespace; returns (ok, seconds, dom)."""
    home = os.path.join(workdir, f"chrome-{name}")
    os.makedirs(home, exist_ok=True)
    argv = ["ip", "netns", "exec", "qs-client",
            *chromium.command(home, spki, url, timeout, flags)]
    t0 = time.time()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 10)
    ok = "censor test page" in res.stdout
    if not ok:  # kept with the test's artifacts: what Chromium showed and logged instead
        with open(os.path.join(home, "failed-fetch.txt"), "w") as f:
            f.write(f"exit {res.returncode} after {time.time() - t0:.2f} s\n"
                    f"--- stdout (the DOM)\n{res.stdout[-20000:]}\n"
                    f"--- stderr\n{res.stderr[-20000:]}\n")
    return ok, time.time() - t0, res.stdout


def gtlsclient_fetch(workdir, name, host, timeout=8, resource="index.html", size=None,
                     address=None, netns="qs-client"):
    """gtlsclient fetches /resource from host:443 (a name: it resolves through the client's
    resolver and sends it as SNI; with `address`, it connects there and sends host as SNI),
    in `netns`; returns (ok, seconds). With `size`, ok means the file arrived whole; else
    that it is the test page."""
    out = os.path.join(workdir, f"dl-{name}")
    os.makedirs(out, exist_ok=True)
    target = [f"--sni={host}", address] if address else [host]
    argv = ["ip", "netns", "exec", netns, "timeout", "-k", "2", str(timeout), "gtlsclient", "--quiet",
            "--exit-on-all-streams-close", f"--download={out}", *target, "443",
            f"https://{host}/{resource}"]
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
