"""Smoke of the flood benchmark (issue 9): server_testbed/bench/flood_bench.py --quick, the
documented command, at a low attack rate (2,000 pps) for every mode that exists, then checks
its CSV: the servers survived (clean exit, so no sanitizer report either), legitimate clients
got through where a defence is on, the counters moved with the flood, and the undefended TCP
listener really was hurt (so the flood is not a no-op); one short --capacity round (the
gate's AF_PACKET sending, the gate throttled by a cgroup). Root; throwaway
namespaces qs-fld-s / qs-fld-c. About a minute.
"""
import csv
import os
import subprocess
import sys
import time
import unittest

from qs_support import artifacts, binaries
from qs_support.measure import measured

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = ["-m", "server_testbed.bench.flood_bench"]  # run from ROOT


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@unittest.skipUnless(os.geteuid() == 0, "needs root (namespaces, raw sockets, BPF)")
class FloodSmoke(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = artifacts.work_dir("qs-fld-smoke-")
        build = binaries.build_dir()
        cls.bench = subprocess.run([sys.executable, *BENCH, "--build", build, "--quick", "--out",
                                    cls.out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=170, cwd=ROOT)
        lines = cls.bench.stdout.splitlines()
        print("\n".join([l for l in lines if l.startswith("flood_bench:")] + lines[-60:]))

    @classmethod
    def tearDownClass(cls):
        artifacts.finish(cls.out, cls.any_failed)

    def test_bench_ran_and_wrote_its_outputs(self):
        self.assertEqual(self.bench.returncode, 0, self.bench.stdout[-2000:])
        for name in ("flood_quic.csv", "flood_tcp.csv", "flood_report.md", "flood_quic.png",
                     "flood_tcp.png"):
            self.assertTrue(os.path.getsize(os.path.join(self.out, name)) > 0, name)

    def quic(self):
        return rows(os.path.join(self.out, "flood_quic.csv"))

    def tcp(self):
        return rows(os.path.join(self.out, "flood_tcp.csv"))

    def test_quic_servers_survive_and_counters_move(self):
        got = self.quic()
        modes = {r["mode"] for r in got}
        self.assertTrue({"noretry", "retry"} <= modes, modes)
        for r in got:
            with self.subTest(mode=r["mode"], variant=r["variant"], rate=r["target_pps"]):
                self.assertEqual(r["server_exit"], "0")
                flooded = int(r["target_pps"]) > 0
                if flooded:  # a flood happened (its rate depends on the machine's load)
                    self.assertGreater(int(r["attack_sent"]), 500)
                if not flooded or r["mode"] != "noretry":
                    self.assertGreaterEqual(float(r["success_rate"]), 0.9)
                if flooded and r["variant"] == "initial":
                    if r["mode"] == "noretry":
                        # flood Initials became connection attempts (as many as the
                        # worker could take: a sanitizer build saturates its core)
                        self.assertGreater(int(r["accepted"]),
                                           int(r["legit_requests"]) + int(r["attack_sent"]) // 10)
                    else:
                        self.assertGreater(int(r["retry_sent"]), int(r["attack_sent"]) // 2)

    def test_tcp_defences_hold_and_no_defence_does_not(self):
        got = {(r["mode"], int(r["target_pps"])): r for r in self.tcp()}
        for (mode, rate), r in got.items():
            with self.subTest(mode=mode, rate=rate):
                self.assertEqual(r["server_exit"], "0")
                if rate == 0 or mode == "cookies":
                    self.assertGreaterEqual(float(r["success_rate"]), 0.9)
                elif mode == "synproxy":
                    # synproxy holds, but 1-20% of legitimate connections stall ~1.65 s
                    # in some runs (server_testbed/flood/README.md, the TCP path): a looser bound
                    self.assertGreaterEqual(float(r["success_rate"]), 0.7)
        flooded = [r for (mode, rate), r in got.items() if rate > 0]
        self.assertTrue(flooded)
        none = [r for r in flooded if r["mode"] == "none"]
        self.assertTrue(none and int(none[0]["listen_drops"]) > 0)
        self.assertLess(float(none[0]["success_rate"]), 0.5)
        cookies = [r for r in flooded if r["mode"] == "cookies"]
        self.assertTrue(cookies and int(cookies[0]["syncookies_sent"]) > 0)


@unittest.skipUnless(os.geteuid() == 0, "needs root (namespaces, raw sockets, BPF, cgroups)")
class FloodCapacity(unittest.TestCase):
    """flood_bench.py --capacity, one short round of the gate sending by AF_PACKET (host
    Retry's rounds work the same way, and flood_smoke keeps to about a minute). Behaviour
    only; the capacity figure is the benchmark's (server_testbed/gate/README.md, capacity):
    - the gate answers the flood with Retries, and every Retry it counts itself is one that
      reached the attacker's end of the link (totals over the gate's whole life on both
      sides: its final counters as it exits, the nft counter read after that), so a gate that
      miscounts, or counts Retries it never sent, fails;
    - the worker behind the gate sees none of the flood (no Retry of its own, no connection);
    - the defender was saturated (its socket dropped datagrams: offered beyond answered) and
      held to its quota by the cgroup (its CPU no more than 1.5 times the quota, throttled);
    - the cgroup is gone afterwards."""

    # The defender's share of a core: small enough that the flooder outpaces it. At 0.1 the
    # ASan gate kept up with an ASan flooder on a loaded run (14 720 Retries/s answered of
    # 15 821 offered, no socket drops); at 0.05 it has half that.
    QUOTA = 0.05

    def test_capacity_round(self):
        build = binaries.build_dir()
        out = artifacts.work_dir("qs-fld-cap-")
        failed = True
        try:
            run = subprocess.run([sys.executable, *BENCH, "--build", build, "--capacity",
                                  "--quota", str(self.QUOTA), "--capacity-rounds", "1",
                                  "--capacity-modes", "gate-packet", "--seconds", "2",
                                  "--out", out], stdout=subprocess.PIPE, cwd=ROOT,
                                 stderr=subprocess.STDOUT, text=True, timeout=120)
            print(run.stdout[-3000:])
            self.assertEqual(run.returncode, 0, run.stdout[-2000:])
            got = {r["mode"]: r for r in rows(os.path.join(out, "flood_capacity.csv"))}
            self.assertEqual(set(got), {"gate-packet"})
            for mode, r in got.items():
                with self.subTest(mode=mode):
                    own, nft = int(r["retries_total_own"]), int(r["retries_total_nft"])
                    measured("gate Retries, own count (whole life)", own, "packets", test=self)
                    measured("gate Retries at the attacker's end / own count",
                             round(nft / max(own, 1), 4), "ratio", 1.0, 0.98, 1.0, test=self)
                    measured("socket drops at the defender", float(r["rcvbuf_errors_per_s"]),
                             "1/s", None, 0, None, test=self)
                    measured("defender CPU / quota", round(float(r["cpu_defender"]) /
                                                           self.QUOTA, 3), "ratio", 1.0, None,
                             1.5, test=self)
                    measured("periods throttled", float(r["throttled_share"]), "share",
                             test=self)
                    measured("Retries per second (nft, window)",
                             float(r["retries_per_s_nft"]), "1/s", test=self)
                    self.assertGreater(own, 100, r)  # it answered the flood
                    # Retries are dropped on the way only by a full veth backlog: allow 2%.
                    self.assertLessEqual(nft, own, r)
                    self.assertGreaterEqual(nft, 0.98 * own, r)
                    self.assertEqual(int(r["retries_total_server"]), 0, r)
                    # Saturated: the gate wanted more CPU than its quota in most periods.
                    # Socket drops follow only when the generator outpaces it over the whole
                    # window, which a loaded machine does not always let it do (a hunt run at
                    # load 10.5 offered 7,073/s and the gate answered 6,877/s with no drop),
                    # so they are reported above, not asserted. Still fails when the quota is
                    # not applied, or the gate idles (sleeps, blocks) while packets wait.
                    self.assertGreater(float(r["throttled_share"]), 0.5, r)
                    self.assertLess(float(r["cpu_defender"]), self.QUOTA * 1.5, r)
            self.assertTrue(os.path.getsize(os.path.join(out, "capacity_report.md")) > 0)
            for base in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup"):
                self.assertFalse(os.path.exists(os.path.join(base, "qs-fld-capacity")))
            failed = False
        finally:
            artifacts.finish(out, failed)


@unittest.skipUnless(os.geteuid() == 0, "needs root (namespaces, raw sockets, BPF)")
class FloodIpv6(unittest.TestCase):
    """The generator's IPv6 path against a live server: spoofed 2001:db8:232::/64 Initials
    reach a Retry server, which answers (into the blackhole) with one Retry each."""

    def test_v6_initials_get_retries(self):
        build = binaries.build_dir()
        from server_testbed.bench import flood_env as env
        work = env.tempdir()
        env.up()
        try:
            cert, key = env.make_cert(work)
            stats_file = os.path.join(work, "stats.json")
            server = env.Proc(env.NS_S, "0", [
                binaries.path("quicstep-server"), "--listen",
                f"[{env.S6}]:443", "--cert", cert, "--key", key, "--workers", "1", "--retry",
                "--stats-file", stats_file, "--duration", "30"], os.path.join(work, "server.log"))
            self.assertTrue(env.wait_file(stats_file, server))
            flood = env.netns(env.NS_C, binaries.path("quicstep-flood"),
                              "--target", env.S6, "--sources", env.SPOOF6, "--count", "500",
                              "--duration", "5", "--rate", "1000")
            sent = env.last_json(flood.stdout)["sent"]
            self.assertEqual(sent, 500)
            time.sleep(0.5)
            code, out = server.stop()
            self.assertEqual(code, 0)
            stats = env.last_json(out)
            retries = sum(w["retry_sent"] for w in stats["workers"])
            self.assertGreaterEqual(retries, 450, stats)
            # and nothing outside the lab is accepted as a source
            bad = env.netns(env.NS_C, binaries.path("quicstep-flood"),
                            "--target", env.S6, "--sources", "2001:db9::/64", "--count", "1",
                            "--duration", "1", check=False)
            self.assertEqual(bad.returncode, 2)
            self.assertIn("2001:db9::/64", bad.stderr)
        finally:
            env.down()
            env.rmtree(work)


if __name__ == "__main__":
    unittest.main()
