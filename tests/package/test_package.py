"""The Debian packages as a person gets them: built by scripts/package.sh (dpkg-buildpackage
-us -uc -b in a clean copy of the tracked files), linted (lintian: no errors), installed with
apt, checked, purged. Checked once installed: every command runs (--version prints the
project's version, --help), `man -w` finds each page and man renders it without warnings,
`systemd-analyze verify` accepts the units (offline: this machine has no systemd as PID 1),
installing started and enabled nothing, the config is the example, the completion loads,
and quicstep-scan scans from /usr/bin (static hosts on loopback). Purged: the packages are
gone from dpkg's database, and no file, directory or link named *quicstep* is left under
/etc, /usr, /lib, /var or /run that was not there before.

QS_PACKAGE_PREBUILT=1 tests the packages already in $QS_BUILD/package instead of building
them (by hand, while working on the checks). Root: it installs and purges on this machine (skipped where quicstep or quicstep-tools is
already installed: the test would replace, then purge them). It leaves the .debs in
$QS_BUILD/package for the image's test (CTest fixture quicstep_debs). Most of its time is
the package's release build (scripts/package.sh prints it)."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from qs_support import artifacts, binaries

REPO = binaries.REPO
PKG_DIR = os.path.join(binaries.build_dir(), "package")
PACKAGES = ("quicstep", "quicstep-tools")
COMMANDS = {"quicstepd": "/usr/sbin", "quicstepctl": "/usr/sbin", "quicstep-tun": "/usr/sbin",
            "quicstep-probe": "/usr/bin", "quicstep-scan": "/usr/bin",
            "quicstep-inspect": "/usr/bin"}
SUBCOMMANDS = {"quicstepctl": ("status", "flows"),
               "quicstep-scan": ("run", "merge", "summary", "csv", "allowlist")}
PAGES = {"quicstepd": "8", "quicstepctl": "8", "quicstepd.toml": "5", "quicstep-probe": "1",
         "quicstep-scan": "1", "quicstep-inspect": "1", "quicstep-tun": "8"}
UNITS = ("quicstepd.service", "quicstepd@.service", "quicstep-tun.service")
# quicstep-tun's WireGuard helper, where quicstep-tun looks for it (../lib/quicstep).
HELPER = "/usr/lib/quicstep/qs-wg-helper"
UNIT_DIR = "/lib/systemd/system"
# Where a package could leave something. Not counted: podman's store (the image's own
# layers), and man-db's cache of formatted pages, which `man` (and systemd-analyze verify,
# reading the units' Documentation=) fills, and man-db's daily job empties of pages whose
# source is gone.
TRACE_ROOTS = ("/etc", "/usr", "/lib", "/var", "/run", "/opt", "/srv")
TRACE_SKIP = ("/var/lib/containers", "/var/tmp", "/run/netns", "/run/containers",
              "/var/cache/man")


def version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        text = f.read()
    return re.search(r"^project\(quicstep VERSION (\S+)", text, re.MULTILINE).group(1)


def status(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkg],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "not known"


def traces():
    """Every path named *quicstep* under TRACE_ROOTS (without following links)."""
    found = set()
    for top in TRACE_ROOTS:
        for d, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if os.path.join(d, x) not in TRACE_SKIP]
            found.update(os.path.join(d, n) for n in dirs + files if "quicstep" in n)
    return found


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=kw.pop("timeout", 120),
                          **kw)


def apt(*args):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return run(["apt-get", "-y", "-q", *args], env=env, timeout=600)


@unittest.skipUnless(os.geteuid() == 0, "needs root (installs and purges the packages)")
@unittest.skipUnless(shutil.which("dpkg-buildpackage"), "dpkg-dev missing (scripts/install.sh)")
class Package(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        already = [p for p in PACKAGES if status(p).startswith("i")]
        if already:
            raise unittest.SkipTest(f"{', '.join(already)} installed on this machine: the test "
                                    "would replace, then purge it")
        cls.work = artifacts.work_dir("qs-package-")
        cls.version = version()
        if os.environ.get("QS_PACKAGE_PREBUILT"):  # by hand: test the .debs already there
            print(f"\n  QS_PACKAGE_PREBUILT: the packages in {PKG_DIR}, not rebuilt", flush=True)
        else:
            t = time.monotonic()
            p = run([os.path.join(REPO, "scripts", "package.sh"), PKG_DIR], timeout=3000)
            print(f"\n  package build: {time.monotonic() - t:.0f} s", flush=True)
            if p.returncode != 0:
                raise AssertionError("scripts/package.sh failed:\n"
                                     f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.debs = {pkg: os.path.join(PKG_DIR, f"{pkg}_{cls.version}_{arch}.deb")
                    for pkg in PACKAGES}
        cls.changes = os.path.join(PKG_DIR, f"quicstep_{cls.version}_{arch}.changes")

    @classmethod
    def tearDownClass(cls):
        artifacts.finish(cls.work, cls.any_failed)

    def test_1_lintian_reports_no_error(self):
        t = time.monotonic()
        p = run(["lintian", "--fail-on", "error", "--display-info", "--tag-display-limit", "0",
                 self.changes], timeout=900)
        print(f"\n  lintian ({time.monotonic() - t:.0f} s):\n{p.stdout}{p.stderr}", flush=True)
        errors = [line for line in p.stdout.splitlines() if line.startswith("E:")]
        self.assertFalse(errors, "\n".join(errors))
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_2_contents(self):
        listing = {}
        for pkg, deb in self.debs.items():
            out = run(["dpkg-deb", "-c", deb]).stdout
            listing[pkg] = {line.split(None, 5)[5].split(" -> ")[0].lstrip(".")
                            for line in out.splitlines()}
        for cmd, where in COMMANDS.items():
            pkg = "quicstep" if where == "/usr/sbin" else "quicstep-tools"
            self.assertIn(f"{where}/{cmd}", listing[pkg])
            self.assertIn(f"/usr/share/bash-completion/completions/{cmd}", listing[pkg])
        for page, section in PAGES.items():
            pkg = "quicstep" if section in ("5", "8") else "quicstep-tools"
            self.assertIn(f"/usr/share/man/man{section}/{page}.{section}.gz", listing[pkg])
        for unit in UNITS:
            self.assertIn(f"{UNIT_DIR}/{unit}", listing["quicstep"])
        self.assertIn(HELPER, listing["quicstep"])
        with tempfile.TemporaryDirectory() as d:
            run(["dpkg-deb", "-e", self.debs["quicstep"], d], timeout=60)
            with open(os.path.join(d, "conffiles")) as f:
                self.assertEqual(f.read().split(), ["/etc/quicstep/quicstepd.toml"])
            scripts = ""
            for name in ("preinst", "postinst", "prerm", "postrm"):
                if os.path.exists(os.path.join(d, name)):
                    with open(os.path.join(d, name)) as f:
                        scripts += f.read()
        # Installing starts nothing, an upgrade stops nothing (debian/rules); whether
        # installing enabled anything is checked once installed.
        self.assertNotRegex(scripts, r"deb-systemd-invoke (start|restart|stop)")

    def test_3_install_check_purge(self):
        before = traces()
        p = apt("install", "--no-install-recommends", *self.debs.values())
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        try:
            files = set()
            for pkg in PACKAGES:
                self.assertTrue(status(pkg).startswith("ii"), status(pkg))
                files |= set(run(["dpkg", "-L", pkg]).stdout.split("\n")) - {""}
            self.check_installed()
        finally:
            p = apt("purge", *PACKAGES)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        for pkg in PACKAGES:
            self.assertFalse(status(pkg).startswith(("i", "r", "c")), f"{pkg}: {status(pkg)}")
        left = sorted(f for f in files if os.path.lexists(f) and not os.path.isdir(f))
        self.assertFalse(left, f"left after purge: {left[:20]}")
        new = sorted(traces() - before)
        self.assertFalse(new, f"left after purge: {new[:20]}")

    def check_installed(self):
        for cmd, where in COMMANDS.items():
            exe = os.path.join(where, cmd)
            p = run([exe, "--version"])
            self.assertEqual((p.returncode, p.stdout), (0, f"{cmd} {self.version}\n"), p.stderr)
            for sub in ((),) + tuple((s,) for s in SUBCOMMANDS.get(cmd, ())):
                p = run([exe, *sub, "--help"])
                self.assertEqual(p.returncode, 0, f"{cmd} {' '.join(sub)} --help: {p.stderr}")
                self.assertRegex(p.stdout, r"(?i)usage:", f"{cmd} {' '.join(sub)} --help")
        for page, section in PAGES.items():
            p = run(["man", "-w", section, page])
            self.assertEqual(p.returncode, 0, f"man -w {section} {page}: {p.stderr}")
            path = p.stdout.strip()
            self.assertTrue(path.startswith(f"/usr/share/man/man{section}/{page}.{section}"), path)
            p = run(["man", "--warnings", "-E", "UTF-8", "-l", path],
                    env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0"))
            self.assertEqual((p.returncode, p.stderr), (0, ""), f"man {page}({section})")
            self.assertIn(f"{page}({section})", p.stdout)
        p = run(["systemd-analyze", "verify", f"{UNIT_DIR}/quicstepd.service",
                 f"{UNIT_DIR}/quicstepd@wg0.service", f"{UNIT_DIR}/quicstep-tun.service"])
        self.assertEqual((p.returncode, p.stderr.strip()), (0, ""), "systemd-analyze verify")
        # Installing started nothing and enabled nothing.
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                continue
            self.assertNotIn(exe, ("/usr/sbin/quicstepd", "/usr/sbin/quicstep-tun"),
                             f"pid {pid} runs an installed daemon")
        wants = [os.path.join(d, n) for d, _, names in os.walk("/etc/systemd/system")
                 for n in names if n.startswith("quicstep")]
        self.assertFalse(wants, f"enabled: {wants}")
        self.assertTrue(os.path.isdir("/run/wireguard"), "tmpfiles entry not applied")
        # quicstep-tun's helper runs from where quicstep-tun looks for it.
        p = run([HELPER, "--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("usage: qs-wg-helper", p.stdout)
        with open("/etc/quicstep/quicstepd.toml") as a, \
                open(os.path.join(REPO, "client", "quicstepd.example.toml")) as b:
            self.assertEqual(a.read(), b.read())
        self.check_completion()
        self.check_scan()

    def check_completion(self):
        script = ("source /usr/share/bash-completion/bash_completion; "
                  "_completion_loader quicstepctl; complete -p quicstepctl; "
                  "COMP_WORDS=(quicstepctl ''); COMP_CWORD=1; COMP_LINE='quicstepctl '; "
                  "COMP_POINT=12; _quicstep; echo \"${COMPREPLY[*]}\"")
        if not os.path.exists("/usr/share/bash-completion/bash_completion"):
            self.skipTest("bash-completion missing (scripts/install.sh)")
        p = run(["bash", "-c", script])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("complete -F _quicstep quicstepctl", p.stdout)
        self.assertEqual(p.stdout.splitlines()[-1], "status flows")

    def check_scan(self):
        """quicstep-scan from /usr/bin with the installed quicstep-probe: two names on
        loopback (nothing listens on UDP 443: ICMP unreachable, no QUIC), one unknown."""
        d = os.path.join(self.work, "scan")
        os.makedirs(d)
        with open(os.path.join(d, "hosts"), "w") as f:
            f.write("a.test 127.0.0.1\nb.test 127.0.0.1\n")
        with open(os.path.join(d, "list.csv"), "w") as f:
            f.write("1,a.test\n2,b.test\n3,c.test\n")
        p = run(["/usr/bin/quicstep-scan", "run", os.path.join(d, "list.csv"), "--out",
                 os.path.join(d, "out"), "--static-hosts", os.path.join(d, "hosts"),
                 "--tries", "1", "--timeout-ms", "1000", "--no-www", "--progress", "lines"],
                env={k: v for k, v in os.environ.items() if k != "QS_PROBE"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"no_quic\s+2\b")
        self.assertRegex(p.stdout, r"dns_failed\s+1\b")
        with open(os.path.join(d, "out", "scan.json")) as f:
            self.assertIn('"/usr/bin/quicstep-probe"', f.read())


if __name__ == "__main__":
    unittest.main()
