"""The scanner's OCI image, built by measurement/scan/image/build.sh from the quicstep-tools
package that test_package.py left in $QS_BUILD/package (CTest fixture quicstep_debs), and
what it holds:
- unpacked (its one layer): quicstep-probe and quicstep-scan in /usr/bin, scanlib beside the
  script, python3, quicstep-tools installed as a package; no daemon, no man pages, no cached
  .deb; the config: named quicstep-scan:VERSION, entrypoint quicstep-scan, PATH, the
  version label; the tools print the package's version run in the root file system (chroot);
- run by podman with --network none (loopback only): `--version` through the entrypoint,
  then a scan of 40 static-hosts domains (on 127.0.0.x, where nothing listens: no_quic; the
  names not listed: dns_failed) as two shards in two containers at once, merged in a third,
  equal to a one-process scan's in a fourth. Where podman cannot run a container here even
  with the options image_support.Podman tries, that part is skipped with podman's errors.
QS_PACKAGE_PREBUILT=1 tests the archive already there instead of building it (by hand).
Leaves the image archive for test_image_lab_scan.py (fixture quicstep_image) and removes the
image from podman's store. Root (mmdebstrap's root mode, chroot, podman). Network: the Debian
archive, through apt's mirror."""
import os
import shutil
import subprocess
import time
import unittest

from measurement.scan.scanlib import records
from measurement.scan.scanlib.classes import classify
from qs_support import artifacts
from tests.package import image_support as img


@unittest.skipUnless(os.geteuid() == 0, "needs root (mmdebstrap, chroot, podman)")
@unittest.skipUnless(shutil.which("mmdebstrap") and shutil.which("umoci"),
                     "mmdebstrap or umoci missing (scripts/install.sh)")
class Image(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deb = img.tools_deb()
        if not cls.deb:
            raise AssertionError(f"no quicstep-tools .deb in {img.PKG_DIR}: "
                                 "tests/package/test_package.py (ctest package) makes it")
        cls.version = img.deb_version(cls.deb)
        cls.work = artifacts.work_dir("qs-image-")
        cls.archive = img.archive_path(cls.version)
        if os.environ.get("QS_PACKAGE_PREBUILT") and os.path.exists(cls.archive):
            print(f"\n  QS_PACKAGE_PREBUILT: {cls.archive}, not rebuilt", flush=True)
        else:
            t = time.monotonic()
            p = img.build(cls.deb, cls.archive)
            if p.returncode != 0:
                raise AssertionError(f"build.sh failed:\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
            print(f"\n  image build: {time.monotonic() - t:.0f} s, "
                  f"{os.path.getsize(cls.archive) >> 20} MiB", flush=True)
        cls.index, cls.manifest, cls.config = img.unpack(cls.archive, cls.work)
        cls.rootfs = os.path.join(cls.work, "rootfs")

    @classmethod
    def tearDownClass(cls):
        artifacts.finish(cls.work, cls.any_failed)

    def test_1_files(self):
        r = self.rootfs
        for path in ("usr/bin/quicstep-probe", "usr/bin/quicstep-inspect",
                     "usr/share/quicstep/scan/quicstep-scan",
                     "usr/share/quicstep/scan/scanlib/runner.py", "usr/bin/python3",
                     "usr/share/doc/quicstep-tools/copyright"):
            self.assertTrue(os.path.exists(os.path.join(r, path)), path)
        self.assertEqual(os.readlink(os.path.join(r, "usr/bin/quicstep-scan")),
                         "../share/quicstep/scan/quicstep-scan")
        for absent in ("usr/sbin/quicstepd", "usr/share/man/man1/quicstep-scan.1.gz",
                       "var/cache/apt/archives/quicstep-tools_{}_amd64.deb".format(self.version)):
            self.assertFalse(os.path.lexists(os.path.join(r, absent)), absent)
        p = subprocess.run(["chroot", r, "dpkg-query", "-W", "-f=${Version}", "quicstep-tools"],
                           capture_output=True, text=True)
        self.assertEqual(p.stdout, self.version, p.stderr)

    def test_2_config(self):
        self.assertEqual([m["annotations"]["org.opencontainers.image.ref.name"]
                          for m in self.index["manifests"]], [f"quicstep-scan:{self.version}"])
        c = self.config["config"]
        self.assertEqual(c["Entrypoint"], ["/usr/bin/quicstep-scan"])
        self.assertEqual(c["Cmd"], ["--help"])
        self.assertEqual(c["Labels"]["org.opencontainers.image.version"], self.version)
        self.assertIn("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                      c["Env"])
        self.assertEqual(len(self.manifest["layers"]), 1)
        self.assertEqual((self.config["os"], self.config["architecture"]), ("linux", "amd64"))

    def test_3_tools_run_in_the_root_file_system(self):
        for cmd in ("quicstep-probe", "quicstep-scan", "quicstep-inspect"):
            p = subprocess.run(["chroot", self.rootfs, cmd, "--version"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual((p.returncode, p.stdout), (0, f"{cmd} {self.version}\n"), p.stderr)
        self.assertFalse(os.path.exists(os.path.join(
            self.rootfs, "usr/share/quicstep/scan/scanlib/__pycache__")))

    def test_4_podman_runs_a_two_shard_scan(self):
        if not shutil.which("podman"):
            self.skipTest("podman missing (scripts/install.sh)")
        podman = img.Podman()
        name = podman.load(self.archive, self.version)
        try:
            out = podman.find_run_options(name)
            for problem in podman.problems:
                print(f"\n  {problem}", flush=True)
            if out is None:
                self.skipTest("podman cannot run a container here: " + " | ".join(podman.problems))
            print(f"\n  podman runs containers with: {podman.global_opts} run {podman.run_opts}",
                  flush=True)
            self.assertEqual(out, f"quicstep-scan {self.version}\n")
            self.two_shard_scan(podman, name)
        finally:
            podman("rmi", "--force", name)

    def two_shard_scan(self, podman, name):
        d = os.path.join(self.work, "scan")
        os.makedirs(d)
        truth = {}
        with open(os.path.join(d, "hosts"), "w") as hosts, \
                open(os.path.join(d, "list.csv"), "w") as lst:
            for i in range(40):
                domain = f"d{i}.test"
                lst.write(f"{i + 1},{domain}\n")
                if i % 4:
                    hosts.write(f"{domain} 127.0.0.{i + 1}\n")
                truth[domain] = "no_quic" if i % 4 else "dns_failed"

        def scan(*args):
            return podman.run_argv(name, "run", f"{d}/list.csv", "--static-hosts", f"{d}/hosts",
                                   "--tries", "1", "--timeout-ms", "1000", "--no-www",
                                   "--workers", "1", "--progress", "lines", *args, volumes=[d])
        shards = [subprocess.Popen(scan("--shard", f"{i}/2", "--out", f"{d}/shard-{i}"),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for i in range(2)]
        for s in shards:
            _, err = s.communicate(timeout=300)
            self.assertEqual(s.returncode, 0, err[-2000:])
        p = subprocess.run(podman.run_argv(name, "merge", f"{d}/shard-0", f"{d}/shard-1", "--out",
                                           f"{d}/merged", "--strict", volumes=[d]),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run(scan("--out", f"{d}/single"), capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)

        def classes(out):
            recs = records.load_latest(os.path.join(out, "results.jsonl"))
            return {dom: classify(r).name for dom, r in recs.items()}
        self.assertEqual([len(classes(f"{d}/shard-{i}")) for i in range(2)], [20, 20])
        self.assertEqual(classes(f"{d}/merged"), truth)
        self.assertEqual(classes(f"{d}/single"), truth)


if __name__ == "__main__":
    unittest.main()
