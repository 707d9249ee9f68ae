"""The project's built programs, found through one variable: QS_BUILD, the build directory
(CTest sets it to its own; by hand it defaults to build/release at the repository's root,
which scripts/test.sh and scripts/demo.sh build). Each program's place inside a build
directory is listed once, here."""
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> path inside a build directory
PLACES = {
    "quicstepd": "client/quicstepd",
    "quicstepctl": "client/quicstepctl",
    "quicstep-inspect": "measurement/quicstep-inspect",
    "quicstep-probe": "measurement/quicstep-probe",
    "quicstep-server": "server_testbed/quicstep-server",
    "quicstep-load": "server_testbed/quicstep-load",
    "quicstep-gate": "server_testbed/quicstep-gate",
    "quicstep-token": "server_testbed/quicstep-token",
    "quicstep-retry-cost": "server_testbed/quicstep-retry-cost",
    "quicstep-flood": "server_testbed/flood/quicstep-flood",
    "quicstep-https": "server_testbed/tcp/quicstep-https",
    "censord": "lab/censor/censord",
    "qs_delay_line": "lab/qs_delay_line",
    "qs_owd_probe": "lab/qs_owd_probe",
    "native_guard_tool": "tests/quicstepd/native_guard_tool",
    "udp_blaster": "tests/quicstepd/udp_blaster",
    "print_ruleset": "tests/quicstepd/print_ruleset",
    # the TUN engine on Linux, and its WireGuard helper: this machine's architecture, and arm64
    "quicstep-tun": "client/quicstep-tun",
    "qs-engine": "client/tun/qs-engine",
    "qs-engine-arm64": "client/tun/qs-engine-arm64",
    "qs-engine-static": "client/tun/qs-engine-static",
    "qs-wg-helper": "client/tun/qs-wg-helper",
    "qs-wg-helper-arm64": "client/tun/qs-wg-helper-arm64",
}


def build_dir():
    return os.path.abspath(os.environ.get("QS_BUILD") or os.path.join(REPO, "build", "release"))


def path(name, required=True, build=None):
    """The absolute path of program `name` in the build directory (`build`, else QS_BUILD,
    else build/release). Raises FileNotFoundError naming the directory and the variable
    when it is not built (required), else returns None."""
    place = os.path.join(os.path.abspath(build) if build else build_dir(), PLACES[name])
    if os.access(place, os.X_OK):
        return place
    if required:
        raise FileNotFoundError(
            f"{name} is not built: no {place} (QS_BUILD names the build directory, default "
            "build/release; scripts/test.sh builds it)")
    return None
