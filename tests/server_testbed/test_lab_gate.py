"""The Retry gate in throwaway namespaces (root): quicstep-server --gate with quicstep-gate in
front, Debian's gtlsclient as the client, tokens minted by quicstep-token.

Topology (reserved for this test):
  qs-gate-c  qsgt-c  198.18.220.2/.3, 2001:db8:220::2/::3
      |  veth
  qs-gate-s  qsgt-s  198.18.220.10, 2001:db8:220::10   server (2 workers) + gate

Proves: the gate answers Initials with Retry and forwards the verified ones (v4, v6) and the
allowlist lets the rest of the handshake bypass it; token validation — a valid NEW_TOKEN
token skips the Retry, expired / forged / other-address tokens are counted and answered with
a fresh Retry, a Retry token for the client's DCID is forwarded once and counted as replayed
when used again; 0-RTT with NEW_TOKEN; fail-open: gate killed → workers do Retry, gate back →
Retries come from the gate again.

Run (from the repository's root; QS_BUILD names the build, default build/release):
     python3 -m unittest -v tests.server_testbed.test_lab_gate
"""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

from qs_support import artifacts, binaries
from server_testbed.bench import srvt_env as env

SERVER = binaries.path("quicstep-server", required=False) or ""
GATE = binaries.path("quicstep-gate", required=False) or ""
TOKEN = binaries.path("quicstep-token", required=False) or ""
LOAD = binaries.path("quicstep-load", required=False) or ""
NS_S, NS_C = "qs-gate-s", "qs-gate-c"
IF_S, IF_C = "qsgt-s", "qsgt-c"
S4, S6 = "198.18.220.10", "2001:db8:220::10"
C4 = ("198.18.220.2", "198.18.220.3")
C6 = ("2001:db8:220::2", "2001:db8:220::3")
NAME = "qstest220"
URI = "https://localhost/bytes/20000"
BODY = 20000


def skip_reason():
    if os.geteuid() != 0:
        return "needs root"
    for var, path in (("quicstep-server", SERVER), ("quicstep-gate", GATE), ("quicstep-token", TOKEN)):
        if not path or not os.path.exists(path):
            return f"{var} is not built (QS_BUILD: the build directory)"
    if not shutil.which("gtlsclient"):
        return "gtlsclient (ngtcp2-client) missing"
    return None


def down():
    for ns in (NS_S, NS_C):
        for pid in env.sh("ip", "netns", "pids", ns, check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        env.sh("ip", "netns", "del", ns, check=False)


def up():
    down()
    env.sh("ip", "netns", "add", NS_S)
    env.sh("ip", "netns", "add", NS_C)
    env.sh("ip", "link", "add", IF_C, "netns", NS_C, "type", "veth", "peer", "name", IF_S,
           "netns", NS_S)
    for ns, ifc, a4s, a6s in ((NS_S, IF_S, (S4,), (S6,)), (NS_C, IF_C, C4, C6)):
        env.sh("ip", "-n", ns, "link", "set", "lo", "up")
        env.netns(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifc}.accept_ra=0")
        for a in a4s:
            env.sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", ifc)
        for a in a6s:
            env.sh("ip", "-n", ns, "-6", "addr", "add", f"{a}/64", "dev", ifc, "nodad")
        env.sh("ip", "-n", ns, "link", "set", ifc, "up")
    # The gate's forwarding queues are unix datagram sockets: their length is this
    # namespace's max_dgram_qlen (default 10), too short for bursts of handshakes.
    env.netns(NS_S, "sysctl", "-qw", "net.unix.max_dgram_qlen=1024")
    env.sh("ip", "-n", NS_C, "route", "replace", "198.18.220.0/24", "dev", IF_C, "src", C4[0])
    env.sh("ip", "-n", NS_C, "-6", "route", "replace", "2001:db8:220::/64", "dev", IF_C,
           "src", C6[0])


def read_json(path):
    for _ in range(50):
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            time.sleep(0.05)
    raise AssertionError(f"no stats in {path}")


class Proc:
    """A process in NS_S whose --stats-file is polled; stop() returns its final JSON."""

    def __init__(self, workdir, tag, cmd):
        self.stats = os.path.join(workdir, f"{tag}-stats.json")
        if os.path.exists(self.stats):
            os.remove(self.stats)
        self.log = open(os.path.join(workdir, f"{tag}.log"), "a")
        self.proc = subprocess.Popen(["ip", "netns", "exec", NS_S, *cmd, "--stats-file",
                                      self.stats], stdout=subprocess.PIPE, stderr=self.log,
                                     text=True)
        deadline = time.time() + 5
        while time.time() < deadline and not os.path.exists(self.stats):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited: {self.proc.returncode}")
            time.sleep(0.05)

    def counters(self):
        """The counters from a write that began at least 0.3 s after this call: what was sent
        before the call has been received by then (the file is rewritten about every second,
        later when the process is slow, so a fixed wait can return a write from before)."""
        fresh_from = time.time() + 0.3
        deadline = fresh_from + 10
        while time.time() < deadline:
            time.sleep(0.1)
            try:
                if os.stat(self.stats).st_mtime >= fresh_from:
                    return read_json(self.stats)
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise AssertionError(f"exited with {self.proc.returncode} before its counters")
        raise AssertionError(f"{self.stats} not rewritten for 10 s")

    def kill(self):
        self.proc.kill()
        self.proc.communicate(timeout=10)
        self.log.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=10)
        self.log.close()
        if self.proc.returncode != 0:  # sanitizer reports make it non-zero
            raise AssertionError(f"exited with {self.proc.returncode}")
        lines = [l for l in out.splitlines() if l.startswith("{")]
        return json.loads(lines[-1]) if lines else read_json(self.stats)


def wsum(stats, key):
    return sum(w[key] for w in stats["workers"])


@unittest.skipIf(skip_reason(), skip_reason())
class RetryGate(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = artifacts.work_dir("qs-gate-")
        up()
        try:
            cls.start_all()
        except Exception:
            down()  # tearDownClass does not run when setUpClass fails
            raise

    @classmethod
    def start_all(cls):
        cls.cert, cls.key = env.make_cert(cls.work)
        cls.master = os.path.join(cls.work, "master.key")
        with open(cls.master, "wb") as f:
            f.write(os.urandom(32))
        cls.servers = []
        for listen in (f"{S4}:443", f"[{S6}]:443"):
            name = NAME + ("v6" if listen.startswith("[") else "v4")
            server = Proc(cls.work, f"server-{name}",
                          [SERVER, "--listen", listen, "--workers", "2", "--cert", cls.cert,
                           "--key", cls.key, "--gate", name, "--master-key", cls.master,
                           "--duration", "170", "--idle-timeout-ms", "3000",
                           "--new-token-lifetime", "60"])
            cls.servers.append((name, listen, server))
        cls.gates = {name: cls.start_gate(name, listen) for name, listen, _ in cls.servers}
        cls.server4 = cls.servers[0][2]
        cls.server6 = cls.servers[1][2]

    @classmethod
    def start_gate(cls, name, listen, *extra):
        return Proc(cls.work, f"gate-{name}", [GATE, "--gate", name, "--listen", listen,
                                               "--master-key", cls.master, "--duration",
                                               "170", "--new-token-lifetime", "60", *extra])

    @classmethod
    def tearDownClass(cls):
        try:
            for gate in cls.gates.values():
                if gate.proc.poll() is None:
                    gate.stop()
            for _, _, server in cls.servers:
                server.stop()
        finally:
            down()
            artifacts.finish(cls.work, cls.any_failed)

    def fetch(self, host=S4, extra=(), timeout=6, name="dl"):
        p, dl = self._client(host, extra, timeout, name)
        rc, size, log = env.finish(p, dl, URI)
        return rc == 0 and size == BODY, log

    def _client(self, host, extra, timeout, name):
        dl = os.path.join(self.work, name)
        shutil.rmtree(dl, ignore_errors=True)
        os.makedirs(dl)
        cmd = ["ip", "netns", "exec", NS_C, "timeout", "-k", "2", str(timeout), "gtlsclient",
               "--exit-on-all-streams-close", "--timeout=5s", f"--download={dl}", "--quiet",
               *extra, host, "443", URI]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT), dl

    def token_file(self, tag, *args):
        path = os.path.join(self.work, f"{tag}.token")
        pem = env.sh(TOKEN, "--master-key", self.master, *args).stdout
        with open(path, "w") as f:
            f.write(pem)
        return path

    def gate4(self):
        return self.gates[self.servers[0][0]]

    # --- Retry by the gate, forwarding, allowlist -------------------------------------------

    def test_a_gate_retries_and_forwards_v4_and_v6(self):
        g4, s4 = self.gate4().counters(), self.server4.counters()
        ok, log = self.fetch(S4)
        self.assertTrue(ok, log[-2000:])
        ok6, log6 = self.fetch(S6)
        self.assertTrue(ok6, log6[-2000:])
        g4b, s4b = self.gate4().counters(), self.server4.counters()
        g6b = self.gates[self.servers[1][0]].counters()
        s6b = self.server6.counters()
        self.assertGreaterEqual(g4b["retry_sent"] - g4["retry_sent"], 1)
        self.assertGreaterEqual(g4b["forwarded"] - g4["forwarded"], 1)
        self.assertGreaterEqual(g4b["tokens"]["valid"] - g4["tokens"]["valid"], 1)
        self.assertEqual(wsum(s4b, "retry_sent"), wsum(s4, "retry_sent"), "workers retried")
        self.assertGreaterEqual(wsum(s4b, "forwarded_in") - wsum(s4, "forwarded_in"), 1)
        self.assertGreaterEqual(s4b["bpf"]["gate"] - s4["bpf"]["gate"], 2)
        self.assertGreaterEqual(g6b["retry_sent"], 1)
        self.assertGreaterEqual(wsum(s6b, "forwarded_in"), 1)
        self.assertEqual(wsum(s6b, "retry_sent"), 0)

    # --- token validation: crafted Initials (quicstep-token --send) -----------------------
    # Debian's gtlsclient 0.12.1 writes --token-file but cannot read it back (its reader
    # takes the file's size before seeking to the end), so tokens are sent by quicstep-token:
    # a real v1 Initial (header, token, AEAD) from the client namespace.

    def send(self, *args, client=C4[0], dcid=None, server=S4):
        dcid = dcid or os.urandom(8).hex()
        source = C4[0] if server == S4 else C6[0]
        env.sh("ip", "netns", "exec", NS_C, TOKEN, "--master-key", self.master, "--send", server,
               "--from", source, "--dcid", dcid, *args,
               *([] if "--token-pem" in args else ["--client", client]))

    def gate_delta(self, before):
        after = self.gate4().counters()
        d = {k: after["tokens"][k] - before["tokens"][k] for k in after["tokens"]}
        for k in ("retry_sent", "forwarded"):
            d[k] = after[k] - before[k]
        d["dropped_token"] = after["dropped"]["token"] - before["dropped"]["token"]
        return d

    def test_b_valid_new_token_skips_retry_and_is_allowlisted(self):
        before, s0 = self.gate4().counters(), self.server4.counters()
        # Two Initials from one port: the first goes through the gate, which forwards it and
        # allowlists the flow; the second bypasses the gate (steering program).
        self.send("--type", "new_token", "--same-port", "--times", "2", "--gap-ms", "300")
        d, s1 = self.gate_delta(before), self.server4.counters()
        self.assertEqual(d["new_token_valid"], 1, d)
        self.assertEqual(d["forwarded"], 1, d)
        self.assertEqual(d["retry_sent"], 0, d)
        self.assertEqual(s1["bpf"]["allowlisted"] - s0["bpf"]["allowlisted"], 1)
        self.assertGreaterEqual(wsum(s1, "forwarded_in") - wsum(s0, "forwarded_in"), 1)

    def test_c_expired_token_counted_and_retried(self):
        before = self.gate4().counters()
        self.send("--type", "new_token", "--age-ms", "65000")  # lifetime 60 s (setUpClass)
        d = self.gate_delta(before)
        # RFC 9000 8.1.3: a NEW_TOKEN token that does not validate counts as none: Retry.
        self.assertEqual(d["expired"], 1, d)
        self.assertEqual(d["retry_sent"], 1, d)
        self.assertEqual(d["forwarded"], 0, d)
        before = self.gate4().counters()
        x = "0f00" + os.urandom(14).hex()  # an expired Retry token: dropped
        self.send("--type", "retry", "--rscid", x, "--odcid", "0102030405060708",
                  "--age-ms", "11000", dcid=x)
        d = self.gate_delta(before)
        self.assertEqual((d["expired"], d["dropped_token"], d["retry_sent"]), (1, 1, 0), d)

    def test_d_wrong_address_token_counted_as_invalid(self):
        before = self.gate4().counters()
        self.send("--type", "new_token", client=C4[1])  # minted for .3, sent from .2
        d = self.gate_delta(before)
        self.assertEqual((d["invalid"], d["new_token_valid"], d["forwarded"]), (1, 0, 0), d)
        self.assertEqual(d["retry_sent"], 1, d)

    def test_e_forged_tokens_counted_as_invalid(self):
        import base64
        path = os.path.join(self.work, "forged.pem")
        real = bytes.fromhex(env.sh(TOKEN, "--master-key", self.master, "--client", C4[0],
                                    "--hex").stdout.strip())
        for first in (0xa1, 0xa2):  # our type octet and the current key id, random rest
            forged = bytes([first, real[1]]) + os.urandom(47 if first == 0xa1 else 36)
            with open(path, "w") as f:
                f.write("-----BEGIN QUIC TOKEN-----\n" + base64.b64encode(forged).decode() +
                        "\n-----END QUIC TOKEN-----\n")
            before = self.gate4().counters()
            self.send("--token-pem", path)
            d = self.gate_delta(before)
            self.assertEqual((d["invalid"], d["valid"], d["forwarded"]), (1, 0, 0), d)

    def test_f_retry_token_replayed(self):
        # A Retry token for DCID x (a worker-0 CID of the server's format) from this client:
        # the first Initial is forwarded; the same token 1.5 s later from a new port (not
        # allowlisted) is beyond the 1 s repeat window: a replay, counted and dropped.
        x = "0f00" + os.urandom(14).hex()
        before = self.gate4().counters()
        self.send("--type", "retry", "--rscid", x, "--odcid", "0102030405060708", "--times",
                  "2", "--gap-ms", "1500", dcid=x)
        d = self.gate_delta(before)
        self.assertEqual((d["valid"], d["forwarded"], d["replayed"]), (1, 1, 1), d)

    # --- 0-RTT and NEW_TOKEN -----------------------------------------------------------------

    def test_g_zero_rtt_and_new_token_from_a_worker(self):
        files = [f"--session-file={self.work}/sess", f"--tp-file={self.work}/tp",
                 f"--token-file={self.work}/nt"]
        for f in ("sess", "tp", "nt"):
            if os.path.exists(os.path.join(self.work, f)):
                os.remove(os.path.join(self.work, f))
        s0 = self.server4.counters()
        ok, log = self.fetch(S4, files, name="z1")
        self.assertTrue(ok, log[-2000:])
        self.assertTrue(os.path.exists(os.path.join(self.work, "nt")), "no NEW_TOKEN received")
        s1 = self.server4.counters()
        self.assertGreaterEqual(wsum(s1, "new_token_sent") - wsum(s0, "new_token_sent"), 1)
        ok, log = self.fetch(S4, files, name="z2")  # resumes with 0-RTT
        s2 = self.server4.counters()
        self.assertTrue(ok, log[-2000:])
        self.assertEqual(wsum(s2, "early_data_accepted") - wsum(s1, "early_data_accepted"), 1,
                         log[-2000:])
        # The worker's NEW_TOKEN token is a universal token: the gate accepts it (no Retry).
        before = self.gate4().counters()
        self.send("--token-pem", os.path.join(self.work, "nt"))
        d = self.gate_delta(before)
        self.assertEqual((d["new_token_valid"], d["forwarded"], d["retry_sent"]), (1, 1, 0), d)

    # --- load through the gate ----------------------------------------------------------------

    def load(self, n, tag):
        """quicstep-load: n connections at 200/s, 20 kB each; returns how many succeeded."""
        out = os.path.join(self.work, f"{tag}.json")
        env.sh("ip", "netns", "exec", NS_C, LOAD, "--server", S4, "--local", C4[0],
               "--connections", str(n), "--size", "20000", "--migrate-after", "10000",
               "--migration", "none", "--rate", "200", "--timeout", "20", "--json", out,
               check=False, timeout=40)
        with open(out) as f:
            return sum(1 for c in json.load(f)["connections"] if c["success"])

    @unittest.skipIf(not LOAD or not os.path.exists(LOAD), "quicstep-load is not built")
    def test_i_quicstep_load_through_the_gate(self):
        g0, s0 = self.gate4().counters(), self.server4.counters()
        ok = self.load(200, "load")
        g1, s1 = self.gate4().counters(), self.server4.counters()
        print(f"\n  quicstep-load via the gate: {ok}/200 ok, gate Retries "
              f"{g1['retry_sent'] - g0['retry_sent']}, forwarded "
              f"{g1['forwarded'] - g0['forwarded']}, verified by workers "
              f"{wsum(s1, 'token_valid') - wsum(s0, 'token_valid')}", flush=True)
        self.assertEqual(ok, 200)
        self.assertGreaterEqual(g1["retry_sent"] - g0["retry_sent"], 200)
        # A retried Initial from a port still in the allowlist (ports get reused; entries
        # live 30 s) bypasses the gate, and the worker verifies the gate's token itself.
        verified = (g1["forwarded"] - g0["forwarded"]) + (wsum(s1, "token_valid") -
                                                          wsum(s0, "token_valid"))
        self.assertGreaterEqual(verified, 200)
        self.assertEqual(g1["dropped"]["queue_full"], g0["dropped"]["queue_full"])
        self.assertEqual(wsum(s1, "retry_sent"), wsum(s0, "retry_sent"))

    # --- fail-open ---------------------------------------------------------------------------

    def test_h_fail_open_and_back(self):
        name, listen, server = self.servers[0]
        s0 = server.counters()
        self.gates[name].kill()
        ok, log = self.fetch(S4, name="fo1")
        s1 = server.counters()
        self.assertTrue(ok, "gate down: " + log[-2000:])
        self.assertGreaterEqual(wsum(s1, "retry_sent") - wsum(s0, "retry_sent"), 1)
        self.assertGreaterEqual(s1["bpf"]["gate_absent"] - s0["bpf"]["gate_absent"], 1)
        self.gates[name] = self.start_gate(name, listen)
        ok, log = self.fetch(S4, name="fo2")
        g2, s2 = self.gates[name].counters(), server.counters()
        self.assertTrue(ok, "gate back: " + log[-2000:])
        self.assertGreaterEqual(g2["retry_sent"], 1)
        self.assertEqual(wsum(s2, "retry_sent"), wsum(s1, "retry_sent"))

    @unittest.skipIf(not LOAD or not os.path.exists(LOAD), "quicstep-load is not built")
    def test_j_gate_killed_mid_load_no_connection_lost(self):
        # 400 connections arriving at 200/s; the gate is killed about 1 s in. Handshakes in
        # flight finish on the workers (they verify the gate's tokens), later ones get worker
        # Retries: every connection succeeds.
        name, listen, server = self.servers[0]
        s0 = server.counters()
        out = os.path.join(self.work, "midload.json")
        p = subprocess.Popen(["ip", "netns", "exec", NS_C, LOAD, "--server", S4, "--local",
                              C4[0], "--connections", "400", "--size", "20000",
                              "--migrate-after", "10000", "--migration", "none", "--rate",
                              "200", "--timeout", "25", "--json", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        g = read_json(self.gates[name].stats)
        self.gates[name].kill()
        p.wait(timeout=40)
        s1 = server.counters()
        with open(out) as f:
            ok = sum(1 for c in json.load(f)["connections"] if c["success"])
        print(f"\n  gate killed mid-load: {ok}/400 ok; before the kill the gate sent "
              f"{g['retry_sent']} Retries and forwarded {g['forwarded']}; afterwards workers "
              f"sent {wsum(s1, 'retry_sent') - wsum(s0, 'retry_sent')} Retries", flush=True)
        self.assertEqual(ok, 400)
        self.assertGreater(g["retry_sent"], 0)  # the gate was serving before it died
        self.assertGreater(wsum(s1, "retry_sent") - wsum(s0, "retry_sent"), 0)
        self.assertGreater(s1["bpf"]["gate_absent"] - s0["bpf"]["gate_absent"], 0)
        self.gates[name] = self.start_gate(name, listen)

    def test_k_allowlist_entries_expire(self):
        # The IPv6 gate again with a 1 s allowlist TTL: a verified flow's next Initial 0.3 s
        # later bypasses the gate, one 1.5 s later goes through it again.
        name, listen, server = self.servers[1]
        self.gates[name].stop()
        self.gates[name] = self.start_gate(name, listen, "--allowlist-ttl", "1")
        gate = self.gates[name]
        for gap, via_gate in (("300", 1), ("1500", 2)):
            g0, s0 = gate.counters(), server.counters()
            self.send("--type", "new_token", "--same-port", "--times", "2", "--gap-ms", gap,
                      client=C6[0], server=S6)
            g1, s1 = gate.counters(), server.counters()
            self.assertEqual(g1["forwarded"] - g0["forwarded"], via_gate, (gap, g1, s1["bpf"]))
            self.assertEqual(s1["bpf"]["allowlisted"] - s0["bpf"]["allowlisted"], 2 - via_gate,
                             gap)


if __name__ == "__main__":
    unittest.main()
