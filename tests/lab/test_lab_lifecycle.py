"""Lab lifecycle tests (root): down leaves nothing behind, two up/down cycles in a row
leave nothing behind, and a failure half-way through up cleans up after itself."""
import os
import shutil
import subprocess
import unittest

from tests.lab.lab_helpers import live_lab_processes, qslab, require_root, status


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def tearDown(self):
        if os.geteuid() == 0:
            qslab("down", check=False)

    def assertNothingLeft(self, pids=()):
        st = status()
        self.assertFalse(st.get("running"), st)
        self.assertEqual(st.get("leftovers"), [], st)
        self.assertEqual(live_lab_processes(), [])
        for pid in pids:
            alive = os.path.exists(f"/proc/{pid}")
            if alive:
                with open(f"/proc/{pid}/stat") as f:
                    alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
            self.assertFalse(alive, f"process {pid} survived down")
        wg = [s for s in os.listdir("/var/run/wireguard")] if os.path.isdir("/var/run/wireguard") else []
        self.assertEqual([s for s in wg if s.startswith("qsw-")], [])
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        self.assertNotIn("qsw-", links)

    def test_two_up_down_cycles_leave_nothing_behind(self):
        for cycle in (1, 2):
            qslab("up", "--profile", "default")
            st = status()
            self.assertTrue(st["running"], f"cycle {cycle}: {st}")
            pids = list(st["processes"].values())
            self.assertGreaterEqual(len(pids), 4, st["processes"])  # 2 wireguard-go, dnsmasq, delay line
            qslab("down")
            self.assertNothingLeft(pids)

    def test_up_removes_leftovers_of_a_crashed_run(self):
        qslab("up", "--profile", "default")
        # A crash: up runs again without a down, the state still there...
        qslab("up", "--profile", "none")
        st = status()
        self.assertTrue(st["running"], st)
        self.assertEqual(st["profile"]["name"], "none")
        self.assertEqual(len([p for p in live_lab_processes() if "wireguard-go" in p]), 2)
        # ... and with the state dir lost too: down still finds everything by name.
        shutil.rmtree(st["state_dir"])
        qslab("up", "--profile", "default")
        self.assertEqual(len([p for p in live_lab_processes() if "wireguard-go" in p]), 2)
        shutil.rmtree(status()["state_dir"])
        qslab("down")
        self.assertNothingLeft()

    def test_failure_half_way_through_up_cleans_up(self):
        for step in ("links", "wireguard", "dns", "delay_line", "handshake"):
            res = qslab("up", "--profile", "default", env={"QSLAB_FAIL_AT": step}, check=False)
            self.assertNotEqual(res.returncode, 0, f"up with a failure at {step} succeeded")
            self.assertIn("injected failure", res.stderr)
            self.assertNothingLeft()

    def test_bad_profile_is_refused_before_anything_starts(self):
        res = qslab("up", "--profile", "no-such-profile", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("unknown profile `no-such-profile'", res.stderr)
        self.assertNothingLeft()


if __name__ == "__main__":
    unittest.main(verbosity=2)
