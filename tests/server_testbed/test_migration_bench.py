"""Smoke test of server_testbed/bench/migration_bench.py (root): a small run of the
concurrent migration benchmark through the delay line (all connections opened first, then
migrated together, steering on and off side by side), checked for the figures the full
10,000-connection run reports.

Run (from the repository's root): python3 -m unittest -v tests.server_testbed.test_migration_bench
"""
import json
import os
import subprocess
import sys
import unittest

from qs_support import artifacts, binaries
from server_testbed.bench import srvt_env as env

SERVER = binaries.path("quicstep-server", required=False) or ""
LOAD = binaries.path("quicstep-load", required=False) or ""
DELAY_LINE = binaries.path("qs_delay_line", required=False) or ""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = ["-m", "server_testbed.bench.migration_bench"]  # run from ROOT
CONNECTIONS = 300
RTT_MS = 20


def skip_reason():
    if os.geteuid() != 0:
        return "needs root"
    for name, path in (("quicstep-server", SERVER), ("quicstep-load", LOAD), ("qs_delay_line", DELAY_LINE)):
        if not path or not os.path.exists(path):
            return f"{name} is not built (QS_BUILD: the build directory)"
    return None


@unittest.skipIf(skip_reason(), skip_reason())
class MigrationBenchSmoke(unittest.TestCase):
    def test_concurrent_migration_side_by_side(self):
        work = env.tempdir()
        out = os.path.join(work, "bench.json")
        p = None
        try:
            p = subprocess.run([sys.executable, *BENCH, "--server", SERVER, "--load", LOAD,
                                "--delay-line", DELAY_LINE, "--rtt-ms", str(RTT_MS),
                                "--connections", str(CONNECTIONS), "--rate", "500",
                                "--hold-wait", "5", "--timeout", "25", "--json", out],
                               capture_output=True, text=True, timeout=150, cwd=ROOT)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            with open(out) as f:
                on, off = json.load(f)["results"]
        finally:
            artifacts.finish(work, failed=p is None or p.returncode != 0)
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
