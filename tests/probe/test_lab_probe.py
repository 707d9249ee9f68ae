"""quicstep-probe against servers whose migration behaviour is known (root; own namespaces).

Run (from the repository's root; QS_BUILD names the build, default build/release):
    python3 -m unittest -v tests.probe.test_lab_probe
Each server in prb_env.SERVERS stands for one behaviour; the labels the prober gives must be
the documented ones, by majority over three tries, and the same through DNS.
"""
import json
import os
import select
import subprocess
import sys
import time
import unittest

from qs_support import artifacts, binaries
from tests.probe import prb_env as env

PROBE, SERVER = binaries.path("quicstep-probe"), binaries.path("quicstep-server")

# name -> expected (quic, error, nat_rebinding, port_migration, address_migration)
EXPECTED = {
    "full.test": (True, None, "pass", "pass", "pass"),
    "portonly.test": (True, None, "pass", "pass", "path_validation_failed"),
    "none.test": (True, None, "timeout_after_switch", "refused", "refused"),
    "stale.test": (True, None, "response_on_old_path", "response_on_old_path",
                   "response_on_old_path"),
    "retry.test": (True, None, "pass", "pass", "pass"),
    "gtls.test": (True, None, "pass", "pass", "pass"),
    "tcponly.test": (False, "icmp_unreachable", "not_run", "not_run", "not_run"),
    "silent.test": (False, "timeout", "not_run", "not_run", "not_run"),
    "caddy.test": (True, None, "response_on_old_path", "refused", "refused"),
}


def run_probe(args, targets):
    cmd = ["ip", "netns", "exec", env.NS_C, PROBE, "--timeout-ms", "2000",
           "--second-local-address", env.C4[1], "--second-local-address6", env.C6[1], *args]
    p = subprocess.run(cmd, input=targets, capture_output=True, text=True, timeout=120)
    records = [json.loads(line) for line in p.stdout.splitlines()]
    return p, records


class ProbeLabels(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = env.tempdir()
        env.up()
        cert, key = env.make_cert(cls.workdir)
        cls.procs = env.Processes(cls.workdir)
        env.start_servers(cls.procs, SERVER, cert, key)
        cls.hosts = env.static_hosts(cls.workdir)

    @classmethod
    def tearDownClass(cls):
        cls.procs.stop()
        env.down()
        artifacts.finish(cls.workdir, cls.any_failed)

    def check_address(self, name, a, tries):
        quic, error, nat, port, addr = EXPECTED[name]
        where = f"{name} {a['ip']}: {json.dumps(a)}"
        self.assertEqual(a["quic"], quic, where)
        self.assertEqual(a["error"], error, where)
        self.assertEqual(a["tests"]["nat_rebinding"]["label"], nat, where)
        self.assertEqual(a["tests"]["port_migration"]["label"], port, where)
        self.assertEqual(a["tests"]["address_migration"]["label"], addr, where)
        if not quic:
            return
        self.assertEqual(a["version"], "0x00000001", where)
        self.assertEqual(a["alpn"], "h3", where)
        self.assertEqual(a["retry"], name == "retry.test", where)
        tp = a["transport_parameters"]
        self.assertEqual(tp["disable_active_migration"], name in ("none.test", "caddy.test"),
                         where)
        self.assertGreater(a["spare_cids"], 0, where)
        self.assertGreater(tp["active_connection_id_limit"], 1, where)
        self.assertIsNotNone(a["status"], where)
        self.assertGreater(a["timings_ms"]["handshake"], 0, where)
        self.assertGreaterEqual(a["timings_ms"]["first_response"], a["timings_ms"]["handshake"])
        if name == "caddy.test":  # its own Server header and idle timeout (quic-go's 30 s)
            self.assertEqual(a["server"], "Caddy", where)
            self.assertEqual(tp["max_idle_timeout_ms"], 30000, where)
        elif name != "gtls.test":
            self.assertEqual(a["server"], "quicstep-server", where)
            self.assertEqual(tp["max_idle_timeout_ms"], 5000, where)
        # A majority of the tries, and no more tries than needed (stops once certain).
        for test in ("nat_rebinding", "port_migration", "address_migration"):
            t = a["tests"][test]
            if t["tries"]:
                self.assertLessEqual(len(t["tries"]), tries, where)
                self.assertGreater(2 * t["tries"].count(t["label"]), tries, where)
                if len(set(t["tries"])) == 1:
                    self.assertEqual(len(t["tries"]), tries // 2 + 1, where)

    def test_static_hosts_three_tries(self):
        targets = "".join(f"{i},{n}\n" for i, n in enumerate(EXPECTED, 1))
        targets += "# a comment\n\n0,zero-rank.test\nbad..name\nmissing.test\n"
        p, records = run_probe(["--static-hosts", self.hosts, "--no-www", "--tries", "3",
                                "--threads", "2"], targets)
        self.assertEqual(p.returncode, 0, p.stderr)
        bad = {r["input_line"]: r for r in records if r.get("error") == "bad_input"}
        zero, empty = len(EXPECTED) + 3, len(EXPECTED) + 4  # after the comment and blank line
        self.assertEqual(sorted(bad), [zero, empty], records)
        self.assertIn(f"input line {zero}: rank is not a positive integer", p.stderr)
        self.assertIn(f"input line {empty}: empty label", p.stderr)
        by_domain = {r["domain"]: r for r in records if "domain" in r}
        self.assertEqual(set(by_domain), set(EXPECTED) | {"missing.test"})
        self.assertEqual(by_domain["missing.test"]["names"][0]["dns"]["status"], "nxdomain")
        self.assertIsNone(by_domain["missing.test"]["rank"])
        for i, name in enumerate(EXPECTED, 1):
            r = by_domain[name]
            self.assertEqual((r["rank"], r["input_line"]), (i, i))
            (n,) = r["names"]
            self.assertEqual(n["dns"]["status"], "ok")
            want = 2 if name == "full.test" else 1  # full.test has an IPv6 address too
            self.assertEqual(len(n["addresses"]), want, r)
            for a in n["addresses"]:
                self.check_address(name, a, 3)
        v6 = [a for a in by_domain["full.test"]["names"][0]["addresses"] if a["family"] == 6]
        self.assertEqual(v6[0]["ip"], "2001:db8:140::10")

    def test_dns_and_www(self):
        names = ["full.test", "none.test", "tcponly.test", "missing.test"]
        p, records = run_probe(["--dns", env.DNS4, "--tries", "1", "--family", "4"],
                               "".join(f"{n}\n" for n in names))
        self.assertEqual(p.returncode, 0, p.stderr)
        by_domain = {r["domain"]: r for r in records}
        self.assertEqual(set(by_domain), set(names))
        for name in names[:3]:
            apex, www = by_domain[name]["names"]
            self.assertEqual((apex["name"], www["name"]), (name, "www." + name))
            for n in (apex, www):
                self.assertEqual(n["dns"]["status"], "ok", n)
                self.assertEqual(n["dns"]["a"], [env.SERVERS[name][0]], n)
                self.assertEqual(len(n["addresses"]), 1, n)
                self.check_address(name, n["addresses"][0], 1)
            # One address, probed once: www.'s record is the apex's, and says so.
            self.assertIsNone(apex["addresses"][0]["same_as"])
            self.assertEqual(www["addresses"][0]["same_as"], name)
            copy = dict(www["addresses"][0], same_as=None)
            self.assertEqual(copy, apex["addresses"][0])
        # dnsmasq without upstream refuses names it does not know: servfail, no address.
        for n in by_domain["missing.test"]["names"]:
            self.assertIn(n["dns"]["status"], ("servfail", "nxdomain"), n)
            self.assertEqual(n["addresses"], [])

    def test_first_answer_timeout(self):
        # A silent address is given up on at --first-answer-timeout-ms, not --timeout-ms (2 s);
        # servers that answer (Retry included) get the whole step timeout and keep their labels.
        names = ["silent.test", "retry.test", "full.test", "tcponly.test"]
        p, records = run_probe(["--static-hosts", self.hosts, "--no-www", "--family", "4",
                                "--tries", "1",
                                "--first-answer-timeout-ms", "400"],
                               "".join(f"{n}\n" for n in names))
        self.assertEqual(p.returncode, 0, p.stderr)
        by_domain = {r["domain"]: r for r in records}
        self.assertEqual(set(by_domain), set(names))
        for name in names:
            (a,) = by_domain[name]["names"][0]["addresses"]
            self.check_address(name, a, 1)
        self.assertLess(by_domain["silent.test"]["elapsed_ms"], 1500)
        self.assertGreaterEqual(by_domain["silent.test"]["elapsed_ms"], 390)

    def test_rate_limit(self):
        # 10 domains x 3 connections (one try per test) at 10 new connections per second:
        # the first is free, the other 29 wait for tokens, so at least ~2.9 s.
        hosts = os.path.join(self.workdir, "rate_hosts.txt")
        with open(hosts, "w") as f:
            for i in range(10):
                f.write(f"d{i}.rate.test {env.SERVERS['full.test'][0]}\n")
        t0 = time.monotonic()
        p, records = run_probe(["--static-hosts", hosts, "--no-www", "--family", "4",
                                "--tries", "1", "--rate", "10", "--threads", "2"],
                               "".join(f"d{i}.rate.test\n" for i in range(10)))
        wall = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(records), 10)
        for r in records:
            tests = r["names"][0]["addresses"][0]["tests"]
            self.assertEqual([tests[k]["label"] for k in sorted(tests)], ["pass"] * 3, r)
        self.assertGreaterEqual(wall, 2.7)
        self.assertLess(wall, 15)

    def test_slow_input_does_not_stall_probes(self):
        # The driver may feed lines slowly: a domain in flight finishes (and its record is
        # written) while the prober still waits for the next line.
        cmd = ["ip", "netns", "exec", env.NS_C, PROBE, "--static-hosts", self.hosts,
               "--no-www", "--family", "4", "--tries", "1", "--threads", "1"]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            p.stdin.write("full.test\n")
            p.stdin.flush()
            # stdin still open: the record must come anyway, within a few seconds.
            ready, _, _ = select.select([p.stdout], [], [], 5)
            self.assertTrue(ready, "no record while the input is still open")
            first = json.loads(p.stdout.readline())
            self.assertEqual(first["domain"], "full.test")
            p.stdin.write("gtls.test\n")
            p.stdin.close()
            second = json.loads(p.stdout.readline())
            self.assertEqual(second["domain"], "gtls.test")
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
