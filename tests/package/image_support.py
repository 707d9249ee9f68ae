"""What the image tests share: where the packages and the image are ($QS_BUILD/package),
building the image (measurement/scan/image/build.sh), its root file system, and podman: loading
the image and the options `podman run` needs on this machine.

Those options are found by trying, in order: none (an ordinary host); this process's own
rlimits (podman asks for RLIMIT_NOFILE 1048576 and a high RLIMIT_NPROC, beyond the hard
limits of a sandbox without CAP_SYS_RESOURCE: crun and runc then fail with "setrlimit ...:
Operation not permitted"); those and runc instead of crun (crun refuses a cgroup v1 host
whose unified hierarchy has a controller: "cgroups in hybrid mode not supported"), with
RLIMIT_NPROC lowered further until the runtime accepts it."""
import glob
import json
import os
import resource
import shutil
import subprocess
import tarfile

from qs_support import binaries

REPO = binaries.REPO
PKG_DIR = os.path.join(binaries.build_dir(), "package")
BUILD = os.path.join(REPO, "measurement", "scan", "image", "build.sh")


def tools_deb():
    """The quicstep-tools .deb that tests/package/test_package.py (scripts/package.sh) left;
    None when there is none."""
    found = sorted(glob.glob(os.path.join(PKG_DIR, "quicstep-tools_*.deb")))
    return found[-1] if found else None


def deb_version(deb):
    return subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True, text=True,
                          check=True).stdout.strip()


def archive_path(version):
    return os.path.join(PKG_DIR, f"quicstep-scan_{version}.oci.tar")


def build(deb, out):
    """Runs build.sh; returns the CompletedProcess."""
    return subprocess.run([BUILD, deb, out], capture_output=True, text=True, timeout=1800)


def unpack(archive, into):
    """Extracts the OCI archive into `into`/oci and its layers, in order, into `into`/rootfs.
    Returns (index, manifest, config) as parsed JSON."""
    layout, rootfs = os.path.join(into, "oci"), os.path.join(into, "rootfs")
    with tarfile.open(archive) as t:
        t.extractall(layout)

    def blob(digest, parse=True):
        algo, hexdigest = digest.split(":")
        path = os.path.join(layout, "blobs", algo, hexdigest)
        if not parse:
            return path
        with open(path) as f:
            return json.load(f)
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    manifest = blob(index["manifests"][0]["digest"])
    os.makedirs(rootfs)
    for layer in manifest["layers"]:
        with tarfile.open(blob(layer["digest"], parse=False)) as t:  # gzip or plain
            t.extractall(rootfs, numeric_owner=True)
    return index, manifest, blob(manifest["config"]["digest"])


class Podman:
    """podman with the global and `run` options this machine needs (module docstring)."""

    def __init__(self):
        self.global_opts, self.run_opts = [], []
        self.problems = []  # what failed before the options that work were found

    def __call__(self, *args, timeout=600, check=False):
        return subprocess.run(["podman", *self.global_opts, *args], capture_output=True,
                              text=True, timeout=timeout, check=check)

    def load(self, archive, version):
        """Loads the archive; returns the image's name (localhost/quicstep-scan:VERSION)."""
        p = self("load", "--quiet", "--input", archive, check=True)
        name = p.stdout.strip().rsplit(" ", 1)[-1]  # "Loaded image: NAME"
        want = f"localhost/quicstep-scan:{version}"
        if name != want:
            raise AssertionError(f"podman load named the image {name!r}, not {want!r}")
        return name

    def find_run_options(self, image):
        """Tries `podman run --network none IMAGE --version` with each set of options; keeps
        the first that works. Returns its output, or None when none does (self.problems
        says why)."""
        def limits(nproc_cap):
            out = []
            for opt, which, cap in (("nofile", resource.RLIMIT_NOFILE, None),
                                    ("nproc", resource.RLIMIT_NPROC, nproc_cap)):
                hard = resource.getrlimit(which)[1]
                if hard != resource.RLIM_INFINITY or cap:
                    n = min(hard, cap) if cap and hard != resource.RLIM_INFINITY else cap or hard
                    out.append(f"--ulimit={opt}={n}:{n}")
            return out
        tries = [([], []), ([], limits(None))]
        if shutil.which("runc"):
            # Measured here: the runtime may raise RLIMIT_NPROC to 32768 but not beyond,
            # below the hard limit this process reports.
            tries += [(["--runtime", "runc"], limits(cap)) for cap in (None, 32768, 4096)]
        for global_opts, run_opts in tries:
            self.global_opts, self.run_opts = global_opts, run_opts
            p = self("run", "--rm", "--network", "none", *run_opts, image, "--version",
                     timeout=120)
            if p.returncode == 0:
                return p.stdout
            self.problems.append(f"podman {' '.join(global_opts + ['run'] + run_opts)}: "
                                 f"{p.stderr.strip()[-500:]}")
        if not shutil.which("runc"):
            self.problems.append("runc is not installed (scripts/install.sh installs it)")
        return None

    def run_argv(self, image, *args, network="none", volumes=()):
        """The argv of one `podman run --rm` (for Popen)."""
        vols = [v for path in volumes for v in ("--volume", f"{path}:{path}")]
        return ["podman", *self.global_opts, "run", "--rm", "--network", network,
                *self.run_opts, *vols, image, *args]
