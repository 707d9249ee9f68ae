"""Throwaway namespaces and process helpers for the quicstep-server lab tests
(tests/server_testbed) and the migration benchmark (migration_bench.py).

Topology (names and addresses reserved for these tests; nothing else uses them):
  qs-srvt-c  qsvt-c  198.18.210.2/.3, 2001:db8:210::2/::3  (two addresses: address migration)
      |  veth, tbf 80 Mbit/s on the server side (transfers last long enough to migrate in)
  qs-srvt-s  qsvt-s  198.18.210.10, 2001:db8:210::10
Everything is removed by name in down(); processes are ended by PID.
"""
import json
import os
import shutil
import signal
import subprocess
import threading
import time

from qs_support import artifacts, certs
from qs_support.netns import sh, netns, remove_namespaces, create_veth_pair  # noqa: F401

# QS_SRVT_NS renames the pair (same addresses, separate namespaces): the benchmark uses
# qs-srvb-* so that a test run elsewhere does not tear its namespaces down mid-run.
_PREFIX = os.environ.get("QS_SRVT_NS", "qs-srvt")
NS_S, NS_C = f"{_PREFIX}-s", f"{_PREFIX}-c"
IF_S, IF_C = "qsvt-s", "qsvt-c"
S4, S6 = "198.18.210.10", "2001:db8:210::10"
C4 = ("198.18.210.2", "198.18.210.3")
C6 = ("2001:db8:210::2", "2001:db8:210::3")


def down():
    remove_namespaces(NS_S, NS_C)


def up():
    down()
    create_veth_pair(NS_S, IF_S, ((S4,), (S6,)), NS_C, IF_C, (C4, C6))
    sh("ip", "-n", NS_S, "link", "set", IF_S, "mtu", "1500")
    sh("tc", "-n", NS_S, "qdisc", "replace", "dev", IF_S, "root", "tbf", "rate", "80mbit",
       "burst", "32kb", "latency", "100ms")
    use_source(C4[0], C6[0])


def use_source(a4, a6):
    """Makes the client's route to the server prefer a4/a6 (gtlsclient picks its address
    from the route when it changes its local address)."""
    sh("ip", "-n", NS_C, "route", "replace", "198.18.210.0/24", "dev", IF_C, "src", a4)
    sh("ip", "-n", NS_C, "-6", "route", "replace", "2001:db8:210::/64", "dev", IF_C, "src", a6)


def make_cert(workdir):
    """The lab's throwaway certificate (qs_support/certs.py): returns (cert, key)."""
    key, cert, _ = certs.make_certificate(workdir)
    return cert, key


def spki_hash(cert):
    """base64 SHA-256 of the certificate's SubjectPublicKeyInfo (Chromium's pin format)."""
    return certs.spki_hash(cert)


class Server:
    """quicstep-server in NS_S; stop() returns its final counters (JSON)."""

    def __init__(self, binary, workdir, cert, key, *args, listen=None, idle_timeout_ms=5000,
                 duration_s=120):
        self.stats = os.path.join(workdir, "stats.json")
        self.log = open(os.path.join(workdir, "server.log"), "w")
        listen = listen or f"{S4}:443"
        cmd = ["ip", "netns", "exec", NS_S, binary, "--listen", listen, "--cert", cert,
               "--key", key, "--stats-file", self.stats, "--duration", str(duration_s),
               "--idle-timeout-ms", str(idle_timeout_ms), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        deadline = time.time() + 5
        while time.time() < deadline and not os.path.exists(self.stats):
            if self.proc.poll() is not None:
                raise RuntimeError(f"quicstep-server exited: {self.proc.returncode}")
            time.sleep(0.05)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=10)
        self.log.close()
        # 0 also proves a clean exit: sanitizer reports (ASan build) make it non-zero.
        if self.proc.returncode != 0:
            raise AssertionError(f"quicstep-server exited with {self.proc.returncode}")
        lines = [l for l in out.splitlines() if l.startswith("{")]
        if lines:
            return json.loads(lines[-1])
        with open(self.stats) as f:
            return json.load(f)


def total(stats, key):
    return sum(w[key] for w in stats["workers"])


def gtlsclient(workdir, host, uri, extra=(), timeout=8, name="dl"):
    """Starts gtlsclient in NS_C; returns (process, download directory) for finish()."""
    dl = os.path.join(workdir, name)
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    cmd = ["ip", "netns", "exec", NS_C, "timeout", "-k", "2", str(timeout), "gtlsclient",
           "--exit-on-all-streams-close", "--timeout=30s", f"--download={dl}", *extra,
           host, "443", uri]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p, dl


HANDSHAKE_COMPLETED = "QUIC handshake has completed"  # gtlsclient's line (not with --quiet)


class ClientOutput:
    """A running gtlsclient's output, read as it comes (the pipe never fills), so that a test
    acts once the client's handshake has completed instead of after a guessed delay (its
    --change-local-addr timer starts there)."""

    def __init__(self, p):
        self._lines = []
        self.handshake = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(p.stdout,), daemon=True)
        self._thread.start()

    def _read(self, pipe):
        for raw in pipe:
            line = raw.decode(errors="replace")
            self._lines.append(line)
            if HANDSHAKE_COMPLETED in line:
                self.handshake.set()

    def text(self):
        self._thread.join(timeout=30)
        return "".join(self._lines)


def finish(p, dl, uri, output=None):
    """Waits for gtlsclient; returns (exit code, downloaded size, log text). output: the
    ClientOutput already reading its log, if any."""
    if output:
        p.wait(timeout=30)
        out = output.text().encode()
        p.stdout.close()
    else:
        out, _ = p.communicate(timeout=30)
    path = os.path.join(dl, uri.rsplit("/", 1)[-1])
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return p.returncode, size, out.decode(errors="replace")


def tempdir():
    """A work directory (under QS_TEST_ARTIFACTS when a test runs: qs_support/artifacts.py)."""
    return artifacts.work_dir("qs-srvt-")
