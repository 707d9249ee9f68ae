"""quicstep-scan against the lab population (measurement/scan/lab_population.py): ~1,000
domains on ~1,700 addresses whose ground truth is known (quicstep-server in each migration
behaviour with Retry off and on, gtlsserver, TCP-only, silent, NXDOMAIN, mixed).

Root; throwaway namespaces qs-prb-c / qs-prb-s1 / qs-prb-d (198.18.128.0/18 without
198.18.140.0/24, 2001:db8:128::/48). Needs QS_PROBE and QS_SERVER (ctest sets them).
Asserts: every domain classified as its ground truth, three runs give identical classes,
a run interrupted by SIGINT resumes to the same result, and two shards merge to it.
Tuning (CI budget; 2.5 to 4 minutes with the ASan build): QS_SCAN_TIMEOUT_MS per step
(default 2000: a silent address costs it once, a server ignoring the new path once per try;
1000 let a loaded ASan server miss it), QS_SCAN_TRIES (default 3, the prober's default:
the label is the majority), QS_SCAN_CONCURRENCY (default 150 domains in
flight per prober process: dnsmasq drops queries beyond a few hundred at once, and the
driver's DNS retries should not be what makes the test pass), QS_SCAN_SCALE (1.0 = 1,020
domains)."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCAN_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "measurement", "scan")

from measurement.scan import lab_population as lp
from measurement.scan.scanlib import records
from measurement.scan.scanlib.classes import classify
from qs_support import artifacts, binaries
from qs_support.measure import measured

PROBE = binaries.path("quicstep-probe", required=False) or ""
SERVER = binaries.path("quicstep-server", required=False) or ""
TIMEOUT_MS = os.environ.get("QS_SCAN_TIMEOUT_MS", "2000")
TRIES = os.environ.get("QS_SCAN_TRIES", "3")
SCALE = float(os.environ.get("QS_SCAN_SCALE", "1.0"))
CONCURRENCY = os.environ.get("QS_SCAN_CONCURRENCY", "150")


def engine_args():
    return ["--dns", lp.D4, "--timeout-ms", TIMEOUT_MS, "--tries", TRIES,
            "--concurrency", CONCURRENCY,
            "--second-local-address", lp.C4_2, "--second-local-address6", lp.C6_2]


@unittest.skipUnless(os.geteuid() == 0, "needs root (network namespaces)")
@unittest.skipUnless(PROBE and SERVER, "QS_PROBE and QS_SERVER must name the binaries")
class LabScan(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = artifacts.work_dir("qs-prb-scan-")
        cls.pop = lp.Population(cls.work, SERVER, SCALE)
        cls.pop.up()
        cls.truth = cls.pop.truth(second_address=True)

    @classmethod
    def tearDownClass(cls):
        cls.pop.stop()
        artifacts.finish(cls.work, cls.any_failed)

    def scan_cmd(self, out, *extra, domains=None):
        """domains: a domain list other than the population's."""
        return ["ip", "netns", "exec", lp.NS_C, "nice", "-n", str(lp.NICE), sys.executable,
                os.path.join(SCAN_DIR, "quicstep-scan"), "run", domains or self.pop.list_path,
                "--out", out,
                "--probe", PROBE, "--progress", "lines", "--progress-interval", "5",
                *extra, *engine_args()]

    def run_scan(self, out, *extra, expect_rc=0):
        t = time.monotonic()
        p = subprocess.run(self.scan_cmd(out, *extra), capture_output=True, text=True, timeout=400)
        took = time.monotonic() - t
        if p.returncode != expect_rc:
            self.fail(f"quicstep-scan exited {p.returncode}: {p.stderr[-3000:]}")
        print(f"\n  scan {os.path.basename(out)} {' '.join(extra)}: {took:.1f} s", flush=True)
        return p

    def classes(self, out):
        recs = records.load_latest(os.path.join(out, "results.jsonl"))
        return {d: (classify(r).name, classify(r).port_migration) for d, r in recs.items()}

    # The prober's answers that mean "nothing came back in time": a handshake that timed out,
    # a migration test that saw no response after the switch, a first response that did not
    # come (labelled connection_closed, the address's error "response_timeout"). A loaded
    # machine can starve a server for longer than a try's 2 s (seen: 7 of 1,020 domains
    # no_quic in one CI run; ~40 migrating servers timing out in one burst of a flake hunt).
    # Every other negative answer (response_on_old_path, path_validation_failed, refused,
    # connection_closed for another reason, icmp_unreachable) is definite.
    TIMEOUTS = {"timeout", "timeout_after_switch"}

    def address_groups(self):
        """Address -> the group whose behaviour it has (a mixed domain's apex does not
        migrate, its www. does)."""
        groups = {}
        for d in self.pop.domains:
            for a in d.apex + d.www:
                groups[a] = d.group if d.group.name != "mixed" else (
                    lp.BY_NAME["none"] if a in d.apex else lp.BY_NAME["full"])
        return groups

    def timed_out(self, label, a):
        return label in self.TIMEOUTS or (label == "connection_closed"
                                          and a.get("error") == "response_timeout")

    def unanswered(self, wrong, out):
        """The wrong domains whose every failure against the truth is a timeout: each
        address that should have completed the handshake timed out in it, each that should
        have passed a migration test timed out in it; addresses expected to fail are not
        counted against. Such a domain is probed again (assert_truth); a domain with any
        definite wrong answer fails at once."""
        recs = records.load_latest(os.path.join(out, "results.jsonl"))
        groups = self.address_groups()
        found = []
        for d, (g, w) in wrong.items():
            addrs = [a for n in (recs.get(d) or {}).get("names") or []
                     for a in n.get("addresses") or []]
            if not g or not addrs:
                continue

            def excused(a):
                """True when this address did nothing against the truth but time out."""
                cls, port = lp.expected(groups[a["ip"]], True)
                if cls == "no_quic":
                    return not a.get("quic")
                if not a.get("quic"):
                    return self.timed_out(a.get("error"), a)
                tests = a.get("tests") or {}
                should_pass = {"nat_rebinding": cls == "quicstep_compatible",
                               "address_migration": cls == "quicstep_compatible",
                               "port_migration": port}
                labels = [(tests.get(t) or {}).get("label") for t, should in
                          should_pass.items() if should]
                return all(x in ("pass", "not_run") or self.timed_out(x, a) for x in labels)

            rank = {"dns_failed": 0, "no_quic": 1, "quic_no_migration": 2,
                    "quicstep_compatible": 3}
            below = (rank[g[0]] < rank[w[0]]) or (g[0] == w[0] and w[1] and not g[1])
            if below and all(excused(a) for a in addrs if a.get("ip") in groups):
                found.append(d)
        return found

    def rescan(self, domains, out):
        """Probes `domains` again in a scan of their own (into out + "-rescan")."""
        path = os.path.join(self.work, f"rescan-{os.path.basename(out)}.csv")
        rank = {d.name: i for i, d in enumerate(self.pop.domains, start=1)}
        with open(path, "w") as f:
            for d in domains:
                f.write(f"{rank[d]},{d}\n")
        again = out + "-rescan"
        p = subprocess.run(self.scan_cmd(again, domains=path), capture_output=True, text=True,
                           timeout=400)
        if p.returncode != 0:
            self.fail(f"quicstep-scan (rescan) exited {p.returncode}: {p.stderr[-3000:]}")
        return self.classes(again), again

    def assert_truth(self, got, what, out=None):
        """Every domain has its true class. out: the run's directory; then a domain wrong by a
        timeout only (unanswered()) is probed once more, in a scan of its own, and must
        get its class there; at most 5% of the domains may need that. A wrong domain's
        message names what each of its addresses got (QUIC or not, the probe's error).
        Still fails: any definite wrong answer, a domain that is wrong again when probed
        again, more than 5% timing out."""
        wrong = {d: (got.get(d), want) for d, want in self.truth.items() if got.get(d) != want}
        extra = set(got) - set(self.truth)
        rescanned = {}
        if out and wrong:
            quiet = self.unanswered(wrong, out)
            measured("domains wrong by a timeout only", len(quiet), "domains", 0, None,
                     len(self.truth) // 20, test=self)
            if quiet and len(quiet) <= len(self.truth) // 20:
                again, again_out = self.rescan(quiet, out)
                print(f"\n  {what}: {len(quiet)} domains wrong by a timeout only, probed again: "
                      f"{sorted(quiet)[:10]}", flush=True)
                for d in quiet:
                    rescanned[d] = again.get(d)
                    if again.get(d) == self.truth[d]:
                        got[d] = again[d]
                        del wrong[d]
                    else:
                        wrong[d] = (again.get(d), self.truth[d])
                        out = again_out
        recs = records.load_latest(os.path.join(out, "results.jsonl")) if out and wrong else {}

        def addresses(d):
            found = [f"{a.get('ip')} quic={a.get('quic')} error={a.get('error')}"
                     for n in (recs.get(d) or {}).get("names") or []
                     for a in n.get("addresses") or []]
            return f" [{', '.join(found)}]" if found else ""
        msg = "; ".join(f"{d}: got {g} want {w}{addresses(d)}"
                        + (" (after a rescan)" if d in rescanned else "")
                        for d, (g, w) in sorted(wrong.items())[:15])
        if wrong or extra:
            print("server counters:", json.dumps(self.pop.counters()), flush=True)
        self.assertFalse(wrong or extra, f"{what}: {len(wrong)} of {len(self.truth)} wrong"
                         f" ({msg}); unexpected {sorted(extra)[:5]}")

    def test_1_three_runs_classify_every_domain(self):
        runs = []
        for i in range(3):
            out = os.path.join(self.work, f"run{i}")
            p = self.run_scan(out)
            self.assertIn(f"domains: {len(self.truth)}", p.stdout)
            got = self.classes(out)
            self.assert_truth(got, f"run {i}", out)
            runs.append(got)
        self.assertEqual(runs[0], runs[1])
        self.assertEqual(runs[0], runs[2])
        print(p.stdout, flush=True)

    def test_2_interrupted_run_resumes(self):
        out = os.path.join(self.work, "resume")
        proc = subprocess.Popen(self.scan_cmd(out), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        path = os.path.join(out, "results.jsonl")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(path) and os.path.getsize(path) > 0:
                with open(path) as f:
                    if sum(1 for _ in f) >= len(self.truth) // 3:
                        break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C does
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, err[-2000:])
        done = len(self.classes(out))
        self.assertLess(done, len(self.truth), "the run ended before it was interrupted")
        p = self.run_scan(out)
        self.assertIn(f"resuming: {done} domains already", p.stderr)
        self.assert_truth(self.classes(out), "resumed run", out)

    def test_3_shards_merge(self):
        shards = []
        for i in range(2):
            out = os.path.join(self.work, f"shard{i}")
            self.run_scan(out, "--shard", f"{i}/2")
            shards.append(out)
        self.assertTrue(all(len(self.classes(s)) < len(self.truth) for s in shards))
        merged = os.path.join(self.work, "merged")
        subprocess.run([sys.executable, os.path.join(SCAN_DIR, "quicstep-scan"), "merge", *shards,
                        "--out", merged, "--strict"], check=True, capture_output=True)
        self.assert_truth(self.classes(merged), "merged shards", merged)
        allow = os.path.join(self.work, "allow.txt")
        subprocess.run([sys.executable, os.path.join(SCAN_DIR, "quicstep-scan"), "allowlist",
                        merged, "--out", allow], check=True, capture_output=True)
        with open(allow) as f:
            listed = {l.split(",")[0] for l in f if not l.startswith("#")}
        # Every address of a non-migrating QUIC group is listed; none of a migrating one.
        for d in self.pop.domains:
            for a in d.apex + d.www:
                group = d.group if d.group.name != "mixed" else (
                    lp.BY_NAME["none"] if a in d.apex else lp.BY_NAME["full"])
                cls, _ = lp.expected(group, True)
                if group.backend in ("qs", "gtls"):
                    self.assertEqual(a in listed, cls == "quic_no_migration", (d.name, a))
                else:
                    self.assertNotIn(a, listed)


if __name__ == "__main__":
    unittest.main()
