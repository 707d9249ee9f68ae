"""The scanner's image scanning the lab population (measurement/scan/lab_population.py: 1,020
domains with known ground truth in the namespaces qs-prb-c / qs-prb-s1 / qs-prb-d) as the
Kubernetes Indexed Job does: two shards, each a podman container (at the same time, each
joined to the prober's namespace qs-prb-c), merged by a third container; the merged result
must equal the ground truth and a one-process scan's (a fourth container, --shard 0/1).

Root, podman able to run containers, and the lab's namespaces free: it must not run while
another lab test uses qs-prb-* (CTest: label lab, RUN_SERIAL). Needs the image archive that
test_image.py leaves in $QS_BUILD/package (fixture quicstep_image) and quicstep-server in
QS_BUILD (the population's servers). About 2-4 minutes once the image is built.
Tuning as tests/probe/test_lab_scan.py: QS_SCAN_TIMEOUT_MS (2000), QS_SCAN_TRIES (3),
QS_SCAN_CONCURRENCY (150 in all: each shard gets half), QS_SCAN_SCALE (1.0)."""
import os
import shutil
import subprocess
import time
import unittest

from measurement.scan import lab_population as lp
from measurement.scan.scanlib import records
from measurement.scan.scanlib.classes import classify
from qs_support import artifacts, binaries
from tests.package import image_support as img

SERVER = binaries.path("quicstep-server", required=False) or ""
TIMEOUT_MS = os.environ.get("QS_SCAN_TIMEOUT_MS", "2000")
TRIES = os.environ.get("QS_SCAN_TRIES", "3")
SCALE = float(os.environ.get("QS_SCAN_SCALE", "1.0"))
CONCURRENCY = int(os.environ.get("QS_SCAN_CONCURRENCY", "150"))
SHARDS = 2


def unanswered(rec):
    """Every address of the record ended its first handshake in a plain timeout: the machine
    starved a server (at most 5% of the domains that should answer QUIC, as
    tests/probe/test_lab_scan.py allows)."""
    addrs = [a for n in rec.get("names") or [] for a in n.get("addresses") or []]
    return bool(addrs) and all(not a.get("quic") and a.get("error") == "timeout" for a in addrs)


@unittest.skipUnless(os.geteuid() == 0, "needs root (network namespaces, podman)")
@unittest.skipUnless(shutil.which("podman"), "podman missing (scripts/install.sh)")
@unittest.skipUnless(SERVER, "quicstep-server is not built in QS_BUILD")
class ImageLabScan(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        deb = img.tools_deb()
        archive = deb and img.archive_path(img.deb_version(deb))
        if not archive or not os.path.exists(archive):
            raise AssertionError(f"no image archive in {img.PKG_DIR}: tests/package/"
                                 "test_image.py (ctest scanner_image) builds it")
        cls.work = artifacts.work_dir("qs-image-scan-")
        cls.podman = img.Podman()
        cls.image = cls.podman.load(archive, img.deb_version(deb))
        if cls.podman.find_run_options(cls.image) is None:
            cls.podman("rmi", "--force", cls.image)
            raise unittest.SkipTest("podman cannot run a container here: "
                                    + " | ".join(cls.podman.problems))
        cls.pop = lp.Population(cls.work, SERVER, SCALE)
        cls.pop.up()
        cls.truth = cls.pop.truth(second_address=True)

    @classmethod
    def tearDownClass(cls):
        cls.pop.stop()
        cls.podman("rmi", "--force", cls.image)
        artifacts.finish(cls.work, cls.any_failed)

    def container(self, *args, network=f"ns:/run/netns/{lp.NS_C}"):
        return self.podman.run_argv(self.image, *args, network=network, volumes=[self.work])

    def scan(self, out, shard, concurrency):
        return self.container(
            "run", self.pop.list_path, "--shard", shard, "--out", out, "--workers", "1",
            "--progress", "lines", "--dns", lp.D4, "--timeout-ms", TIMEOUT_MS,
            "--tries", TRIES, "--concurrency", str(concurrency),
            "--second-local-address", lp.C4_2, "--second-local-address6", lp.C6_2)

    def classes(self, out):
        recs = records.load_latest(os.path.join(out, "results.jsonl"))
        return ({d: (classify(r).name, classify(r).port_migration) for d, r in recs.items()},
                {d for d, r in recs.items() if unanswered(r)})

    def test_two_shards_in_containers_merge_to_the_one_process_scan(self):
        t = time.monotonic()
        outs = [os.path.join(self.work, f"shard-{i}") for i in range(SHARDS)]
        procs = [subprocess.Popen(self.scan(out, f"{i}/{SHARDS}", CONCURRENCY // SHARDS),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i, out in enumerate(outs)]
        for i, p in enumerate(procs):
            _, err = p.communicate(timeout=900)
            self.assertEqual(p.returncode, 0, f"shard {i}: {err[-3000:]}")
        shards_s = time.monotonic() - t
        merged = os.path.join(self.work, "merged")
        p = subprocess.run(self.container("merge", *outs, "--out", merged, "--strict",
                                          network="none"), capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        t = time.monotonic()
        single = os.path.join(self.work, "single")
        p = subprocess.run(self.scan(single, "0/1", CONCURRENCY), capture_output=True, text=True,
                           timeout=900)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        single_s = time.monotonic() - t
        print(f"\n  two shards in containers: {shards_s:.1f} s; one process: {single_s:.1f} s",
              flush=True)
        got_m, quiet_m = self.classes(merged)
        got_s, quiet_s = self.classes(single)
        self.assertEqual(set(got_m), set(self.truth))
        self.assertEqual(set(got_s), set(self.truth))
        # Unanswered counts only against a domain that should answer QUIC (a silent one's
        # timeouts are its true class).
        quiet = {d for d in quiet_m | quiet_s if self.truth[d][0] != "no_quic"}
        self.assertLessEqual(len(quiet), len(self.truth) // 20, f"unanswered: {sorted(quiet)}")
        for name, got in (("merged shards", got_m), ("one process", got_s)):
            wrong = {d: (g, self.truth[d]) for d, g in got.items()
                     if g != self.truth[d] and d not in quiet}
            self.assertFalse(wrong, f"{name}: {len(wrong)} wrong: {sorted(wrong.items())[:10]}")
        differ = {d for d in self.truth if got_m[d] != got_s[d] and d not in quiet}
        self.assertFalse(differ, f"merged and one-process scans differ: {sorted(differ)[:10]}")


if __name__ == "__main__":
    unittest.main()
