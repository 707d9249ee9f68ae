"""Page-load smoke (ctest pageload_smoke): on the shared lab, profile rate-5mbit (channel 5
Mbit/s), chromium-headless-shell loads a 1 MB page over HTTP/3 natively, through the full
VPN and through quicstepd for a few alternating rounds (measurement/pageload/harness.py);
QUICstep must beat the full VPN on page-load time and on bytes through the provider."""
import statistics
import unittest

from measurement.pageload import harness
from qs_support.lab import wait_idle as wait_lab_idle
from tests.lab import lab_helpers

ROUNDS = 3


class PageLoadSmoke(unittest.TestCase):
    def test_quicstep_beats_full_vpn_at_1mb_5mbit(self):
        lab_helpers.require_root(self)
        wait_lab_idle()
        batch = harness.Batch("smoke", "rate-5mbit", None, ["1MB"], ROUNDS, timeout=60)
        try:
            batch.up()
            rows = batch.run()
        finally:
            batch.down()
        by_mode = {m: [r for r in rows if r["mode"] == m] for m in harness.MODES}
        for mode, rs in by_mode.items():
            self.assertEqual(len(rs), ROUNDS, mode)
            for r in rs:
                self.assertTrue(r["ok"], f"{mode} round {r['round']}: {r['error']}")
                self.assertEqual(r["protocol"], "h3", f"{mode}: Chromium did not use HTTP/3")
                self.assertEqual(r["non_h3_responses"], 0)
        for r in by_mode["QUICstep"]:
            self.assertGreaterEqual(r["qs_moved_native"], 1, "quicstepd did not migrate the flow")
            self.assertGreater(r["qs_native_in_bytes"], 900_000, "the page did not come natively")

        def median(mode, field):
            return statistics.median(r[field] for r in by_mode[mode])
        qs, vpn = median("QUICstep", "plt_ms"), median("full VPN", "plt_ms")
        print(f"\nPLT median ms: native {median('native', 'plt_ms'):.0f}, full VPN {vpn:.0f}, "
              f"QUICstep {qs:.0f} (QS/VPN {qs / vpn:.3f}); channel bytes: VPN "
              f"{median('full VPN', 'channel_bytes'):,.0f}, QUICstep "
              f"{median('QUICstep', 'channel_bytes'):,.0f}", flush=True)
        self.assertLess(qs, 0.6 * vpn, "QUICstep's page load is not clearly faster than the VPN's")
        self.assertGreater(median("full VPN", "channel_bytes"), 1_000_000)
        self.assertLess(median("QUICstep", "channel_bytes"),
                        0.1 * median("full VPN", "channel_bytes"))


if __name__ == "__main__":
    unittest.main()
