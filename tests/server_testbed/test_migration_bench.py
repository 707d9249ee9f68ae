"""Smoke test of server_testbed/bench/migration_bench.py (root): a small run of the
concurrent migration benchmark through the delay line (all connections opened first, then
migrated together, steering on and off side by side), checked for the figures the full
10,000-connection run reports.

Run: QS_SERVER=... QS_LOAD=... QS_DELAY_LINE=... python3 -m unittest -v test_migration_bench
"""
import json
import os
import subprocess
import sys
import unittest

import srvt_env as env

SERVER = os.environ.get("QS_SERVER", "")
LOAD = os.environ.get("QS_LOAD", "")
DELAY_LINE = os.environ.get("QS_DELAY_LINE", "")
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server_testbed",
                     "bench", "migration_bench.py")
CONNECTIONS = 300
RTT_MS = 20


def skip_reason():
    if os.geteuid() != 0:
        return "needs root"
    for name, path in (("QS_SERVER", SERVER), ("QS_LOAD", LOAD), ("QS_DELAY_LINE", DELAY_LINE)):
        if not path or not os.path.exists(path):
            return f"{name} not set to a binary"
    return None


@unittest.skipIf(skip_reason(), skip_reason())
class MigrationBenchSmoke(unittest.TestCase):
    def test_concurrent_migration_side_by_side(self):
        work = env.tempdir()
        out = os.path.join(work, "bench.json")
        try:
            p = subprocess.run([sys.executable, BENCH, "--server", SERVER, "--load", LOAD,
                                "--delay-line", DELAY_LINE, "--rtt-ms", str(RTT_MS),
                                "--connections", str(CONNECTIONS), "--rate", "500",
                                "--hold-wait", "5", "--timeout", "25", "--json", out],
                               capture_output=True, text=True, timeout=150)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            with open(out) as f:
                on, off = json.load(f)["results"]
        finally:
            env.shutil.rmtree(work, ignore_errors=True)
        print("\n" + "\n".join(l for l in p.stdout.splitlines() if l.startswith("steering")))
        for r in (on, off):  # (nearly) every connection was open when they migrated together
            self.assertGreaterEqual(r["held_at_barrier"], CONNECTIONS * 0.95)
        self.assertTrue(on["steering"])
        # With steering every connection that migrated completed its transfer.
        self.assertGreaterEqual(on["succeeded"], on["held_at_barrier"])
        self.assertEqual(on["misdirected"], 0)
        self.assertGreaterEqual(on["handover_measured"], on["held_at_barrier"])
        # Handover costs at least the round trip of the new path (MAX_STREAM_DATA out, data
        # back), through the delay line.
        self.assertGreaterEqual(on["handover_ms_p50"], RTT_MS * 0.9)
        self.assertFalse(off["steering"])
        self.assertGreater(off["misdirected_share"], 0.2)
        self.assertLess(off["succeeded"], CONNECTIONS)
        self.assertGreater(off["loss_after_migration"], on["loss_after_migration"])


if __name__ == "__main__":
    unittest.main()
