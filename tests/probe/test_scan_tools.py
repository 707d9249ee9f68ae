"""Unit tests of quicstep-scan (measurement/scan) on fixtures: list parsing, sharding,
classes, resume, merge, CSV, summary, ip2asn, allowlist, and `run` end to end with a
stand-in engine (data/fake_probe.py). No root, no network."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
SCAN_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "measurement", "scan")
SCAN = os.path.join(SCAN_DIR, "quicstep-scan")

from measurement.scan.scanlib import records, reports
from measurement.scan.scanlib.classes import classify
from measurement.scan.scanlib.ip2asn import Ip2Asn
from measurement.scan.scanlib.progress import Progress
from measurement.scan.scanlib.targets import (BadLine, ListReport, Target, parse_line,
                                              parse_shard, read_targets)

EXPECTED = {  # fixture domain → (class, port migration)
    "full.test": ("quicstep_compatible", True),
    "portonly.test": ("quic_no_migration", True),
    "nomig.test": ("quic_no_migration", False),
    "stale.test": ("quic_no_migration", False),
    "tcponly.test": ("no_quic", False),
    "silent.test": ("no_quic", False),
    "nxd.test": ("dns_failed", False),
    "mixed.test": ("quicstep_compatible", True),
    "servfail.test": ("dns_failed", False),
}


def fixture_records():
    with open(os.path.join(DATA, "scan_records.jsonl")) as f:
        return [json.loads(l) for l in f]


def scan(*args, env=None, check=True):
    e = dict(os.environ, QS_PROBE=os.path.join(DATA, "fake_probe.py"), **(env or {}))
    p = subprocess.run([sys.executable, SCAN, *args], env=e, capture_output=True, text=True,
                       timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"quicstep-scan {args} exited {p.returncode}: {p.stderr}")
    return p


class ListParsing(unittest.TestCase):
    def test_lines(self):
        self.assertEqual(parse_line(1, "12,Example.COM.\n"), Target(1, 12, "example.com"))
        self.assertEqual(parse_line(2, "example.org"), Target(2, None, "example.org"))
        self.assertIsNone(parse_line(3, "  "))
        self.assertIsNone(parse_line(4, "# note"))
        for text, words in (("x,a.test", "rank"), ("0,a.test", "rank"), ("1,a,b", "expected"),
                            ("1,", "empty"), ("a..b", "label"), ("-a.test", "label"),
                            ("a b.test", "label"), ("x" * 64 + ".test", "label"),
                            ("a." * 127 + "ab", "253")):
            got = parse_line(7, text)
            self.assertIsInstance(got, BadLine, text)
            self.assertEqual(got.line, 7)
            self.assertIn(words, got.reason, text)

    def test_sample_list(self):
        rep = ListReport()
        with open(os.path.join(DATA, "tranco_sample.csv")) as f:
            got = list(read_targets(f, report=rep))
        self.assertEqual([t.domain for t in got], list(EXPECTED))
        self.assertEqual([b.line for b in rep.bad], [8, 13, 15])
        self.assertEqual(rep.duplicates, 1)
        self.assertEqual(got[7], Target(11, 8, "mixed.test"))

    def test_shards_partition_the_list(self):
        lines = [f"{i},d{i}.test\n" for i in range(1, 101)]
        whole = [t.domain for t in read_targets(lines)]
        parts = [[t.domain for t in read_targets(lines, (i, 7))] for i in range(7)]
        self.assertEqual(sorted(sum(parts, [])), sorted(whole))
        self.assertTrue(all(13 <= len(p) <= 15 for p in parts))
        self.assertEqual(parts[3], [t.domain for t in read_targets(lines, (3, 7))])  # stable
        self.assertEqual(parse_shard("2/5"), (2, 5))
        for bad in ("5/5", "1", "-1/2", "a/b", "0/0"):
            with self.assertRaises(ValueError):
                parse_shard(bad)


class Classes(unittest.TestCase):
    def test_fixture_classes(self):
        for rec in fixture_records():
            dc = classify(rec)
            self.assertEqual((dc.name, dc.port_migration), EXPECTED[rec["domain"]], rec["domain"])

    def test_address_migration_must_pass_when_run(self):
        rec = next(r for r in fixture_records() if r["domain"] == "full.test")
        for a in rec["names"][0]["addresses"] + rec["names"][1]["addresses"]:
            a["tests"]["address_migration"]["label"] = "path_validation_failed"
        self.assertEqual(classify(rec).name, "quic_no_migration")

    def test_primary_ip_prefers_quic(self):
        rec = next(r for r in fixture_records() if r["domain"] == "mixed.test")
        self.assertEqual(classify(rec).primary_ip, "203.0.113.8")
        rec["names"][0]["addresses"][0]["quic"] = False
        self.assertEqual(classify(rec).primary_ip, "198.51.100.8")


class ResultsFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="qs-scan-test-")
        self.path = os.path.join(self.dir, "results.jsonl")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_truncated_tail_is_ignored_and_cut(self):
        recs = fixture_records()
        with open(self.path, "w") as f:
            for r in recs[:3]:
                f.write(json.dumps(r) + "\n")
            f.write("not json\n")
            f.write(json.dumps(recs[3])[:40])
        rep = records.ReadReport()
        got = records.load_latest(self.path, rep)
        self.assertEqual(sorted(got), sorted(r["domain"] for r in recs[:3]))
        self.assertTrue(rep.truncated_tail)
        self.assertEqual(rep.bad_lines[0][0], 4)
        f, cut = records.open_for_append(self.path)
        f.write(records.dump_line(recs[3]))
        f.close()
        self.assertEqual(cut, 40)
        rep = records.ReadReport()
        self.assertEqual(len(records.load_latest(self.path, rep)), 4)
        self.assertFalse(rep.truncated_tail)


class Reports(unittest.TestCase):
    def setUp(self):
        self.table = Ip2Asn.from_file(os.path.join(DATA, "ip2asn_sample.tsv"))

    def test_ip2asn(self):
        self.assertEqual(self.table.lookup("198.51.100.77").asn, 64500)
        self.assertEqual(self.table.lookup("198.51.100.255").description, "EXAMPLE-CDN")
        self.assertEqual(self.table.lookup("2001:db8:1::1").asn, 64500)
        self.assertIsNone(self.table.lookup("2001:db8:2::1"))
        self.assertIsNone(self.table.lookup("203.0.113.200"))  # AS 0: not routed
        self.assertIsNone(self.table.lookup("198.51.101.0"))
        self.assertIsNone(self.table.lookup("10.0.0.1"))
        self.assertIsNone(self.table.lookup("nonsense"))
        self.assertEqual([e[0] for e in self.table.errors], [6])

    def test_summary(self):
        s = reports.summarize(fixture_records(), self.table)
        self.assertEqual(s["domains"], 9)
        self.assertEqual(s["classes"]["quicstep_compatible"]["count"], 2)
        self.assertEqual(s["classes"]["quic_no_migration"]["count"], 3)
        self.assertEqual(s["classes"]["no_quic"]["count"], 2)
        self.assertEqual(s["classes"]["dns_failed"]["count"], 2)
        self.assertAlmostEqual(s["quic"]["share"], round(5 / 9, 4))
        self.assertEqual(s["port_migration"]["count"], 3)
        prov = {p["provider"]: p for p in s["providers"]}
        self.assertEqual(prov["AS64500 EXAMPLE-CDN"]["domains"], 2)   # full, portonly
        self.assertEqual(prov["AS64501 EXAMPLE-HOSTING"]["domains"], 3)  # nomig stale mixed
        self.assertEqual(prov["AS64502 EXAMPLE-TCP"]["no_quic"], 2)
        self.assertIn("quicstep_compatible", reports.format_summary(s))

    def test_csv(self):
        rows = list(csv.reader(io.StringIO(reports.paper_csv(
            reversed(fixture_records()), self.table))))
        self.assertEqual(rows[0], ["Num", "Domain", "QUIC", "Connection migration", "IP", "ASN"])
        self.assertEqual(rows[1], ["1", "full.test", "yes", "yes", "198.51.100.1", "64500"])
        self.assertEqual(rows[3], ["3", "nomig.test", "yes", "no", "203.0.113.3", "64501"])
        self.assertEqual(rows[5], ["5", "tcponly.test", "no", "", "192.0.2.5", "64502"])
        self.assertEqual(rows[7], ["7", "nxd.test", "no", "", "", ""])
        self.assertEqual(len(rows), 10)

    def test_merge(self):
        recs = {r["domain"]: r for r in fixture_records()}
        a = {d: recs[d] for d in ("full.test", "nomig.test", "nxd.test")}
        changed = json.loads(json.dumps(recs["nomig.test"]))
        changed["names"][0]["addresses"][0]["tests"]["nat_rebinding"]["label"] = "pass"
        b = {"nomig.test": changed, "stale.test": recs["stale.test"], "nxd.test": recs["nxd.test"]}
        merged, conflicts, dups = reports.merge([("a", a), ("b", b)])
        self.assertEqual([r["domain"] for r in merged],
                         ["full.test", "nomig.test", "stale.test", "nxd.test"])
        self.assertEqual(dups, 2)
        self.assertEqual(conflicts, [("nomig.test", "a", "quic_no_migration", "b",
                                      "quicstep_compatible")])
        self.assertIs(merged[1], recs["nomig.test"])

    def test_allowlist(self):
        text, counts = reports.allowlist(fixture_records(), port=443)
        body = [l for l in text.splitlines() if not l.startswith("#")]
        self.assertEqual(body, ["198.51.100.2,443 path_validation_failed",
                                "203.0.113.3,443 timeout_after_switch",
                                "203.0.113.4,443 response_on_old_path",
                                "203.0.113.8,443 timeout_after_switch"])
        self.assertEqual(counts["non_migrating"], 4)
        # The format quicstepd parses (client/core/destination_cache.hpp): address[,port] reason.
        import re
        for l in body:
            self.assertRegex(l, r"^[0-9a-f.:]+,[0-9]{1,5} [A-Za-z0-9_.-]+$")

    def test_progress(self):
        out = io.StringIO()
        p = Progress(10, out, tty=True, start=100.0)
        p.add("quicstep_compatible", True)
        p.add("no_quic", False)
        p.tick(102.0)
        self.assertIn("[####....................] 2/10  20.0%     1.0/s ETA 0:00:08", out.getvalue())
        self.assertIn("compat 1 no-mig 0 no-quic 1 dns-fail 0 | port-mig 1", out.getvalue())
        out = io.StringIO()
        p = Progress(10, out, tty=False, start=0.0, interval=5)
        p.tick(1.0)
        p.tick(2.0)
        p.tick(6.5)
        self.assertEqual(out.getvalue().count("progress: "), 2)


class RunCommand(unittest.TestCase):
    """`quicstep-scan run` with data/fake_probe.py as the engine."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="qs-scan-test-")
        self.list = os.path.join(self.dir, "list.csv")
        with open(self.list, "w") as f:
            with open(os.path.join(DATA, "tranco_sample.csv")) as src:
                f.write(src.read())
            for i in range(100, 400):
                f.write(f"{i},gen{i}.test\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def classes(self, d):
        recs = records.load_latest(os.path.join(d, "results.jsonl"))
        return {k: (classify(r).name, r.get("input_line")) for k, r in recs.items()}

    def test_run_resume_shard_merge(self):
        whole = os.path.join(self.dir, "whole")
        p = scan("run", self.list, "--out", whole, "--workers", "2",
                 "--progress", "lines", "--dns", "198.18.0.1", "--rate", "100")
        self.assertIn("list line 8: rank is not a positive integer: `x'", p.stderr)
        self.assertIn("bad list lines: 3; duplicates: 1", p.stderr)
        self.assertIn("progress: 309/309", p.stderr)
        self.assertIn("retrying 1 domains with a DNS lookup that timed out (pass 3)", p.stderr)
        ref = self.classes(whole)
        self.assertEqual(len(ref), 309)
        self.assertEqual(ref["mixed.test"], ("quicstep_compatible", 11))  # list line, not engine's
        for d, (cls, _) in EXPECTED.items():
            self.assertEqual(ref[d][0], cls, d)
        # Interrupted (as Ctrl-C) after 50 records, plus a torn last line: resume completes.
        part = os.path.join(self.dir, "part")
        p = scan("run", self.list, "--out", part, "--workers", "2",
                 "--stop-after", "50", env={"FAKE_PROBE_DELAY_MS": "5"}, check=False)
        self.assertEqual(p.returncode, 130, p.stderr)
        n = len(self.classes(part))
        self.assertTrue(50 <= n < 309, n)
        with open(os.path.join(part, "results.jsonl"), "a") as f:
            f.write('{"domain":"torn')
        p = scan("run", self.list, "--out", part, "--workers", "2")
        self.assertIn("last line is incomplete", p.stderr)
        self.assertIn(f"resuming: {n} domains already", p.stderr)
        self.assertEqual(self.classes(part), ref)
        # A crashing engine: reported, and a rerun completes.
        crash = os.path.join(self.dir, "crash")
        p = scan("run", self.list, "--out", crash, "--workers", "1",
                 env={"FAKE_PROBE_EXIT_AFTER": "20"}, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("unfinished", p.stderr)
        scan("run", self.list, "--out", crash, "--workers", "2")
        self.assertEqual(self.classes(crash), ref)
        # Three shards, merged: the same records.
        shards = []
        for i in range(3):
            d = os.path.join(self.dir, f"shard{i}")
            scan("run", self.list, "--out", d, "--shard", f"{i}/3", "--workers", "1")
            shards.append(d)
        self.assertEqual(sum(len(self.classes(d)) for d in shards), 309)
        merged = os.path.join(self.dir, "merged")
        p = scan("merge", *shards, whole, "--out", merged)
        self.assertIn("merged 309 domains from 4 directories", p.stdout)
        self.assertIn("309 duplicates, 0 conflicts", p.stdout)
        self.assertEqual(self.classes(merged), ref)
        # summary / csv / allowlist on the merged directory.
        p = scan("summary", merged, "--ip2asn", os.path.join(DATA, "ip2asn_sample.tsv"))
        self.assertIn("dns_failed", p.stdout)
        with open(os.path.join(merged, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["classes"]["dns_failed"]["count"], 302)
        scan("csv", merged)
        with open(os.path.join(merged, "results.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 310)
        allow = os.path.join(self.dir, "allow.txt")
        p = scan("allowlist", merged, "--out", allow)
        self.assertIn("4 non-migrating destinations", p.stdout)

    def test_engine_options_passed_through(self):
        args = os.path.join(self.dir, "args.jsonl")
        scan("run", self.list, "--out", os.path.join(self.dir, "o"), "--workers", "2",
             "--rate", "1000", "--timeout-ms", "700", "--family", "both", "--no-www",
             "--", "--max-addresses", "2", env={"FAKE_PROBE_ARGS": args})
        with open(args) as f:
            argv = [json.loads(l) for l in f]
        self.assertEqual(len(argv), 6)  # 2 workers; servfail.test retried twice (--dns-retries)
        self.assertEqual(argv[0], ["--timeout-ms", "700", "--family", "both", "--threads", "1",
                                   "--rate", "500", "--no-www", "--max-addresses", "2"])

    def test_missing_engine(self):
        p = subprocess.run([sys.executable, SCAN, "run", self.list, "--out", self.dir,
                            "--probe", "/nonexistent"],
                           env=dict(os.environ, QS_PROBE="/nonexistent", PATH="/usr/bin:/bin"),
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("quicstep-probe not found", p.stderr)


if __name__ == "__main__":
    unittest.main()
