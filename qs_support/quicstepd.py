"""quicstepd in the lab, as the tests, the demo and the page-load harness start it: its
config file, its control tool, waiting for it, and the bpffs its routed path pins on."""
import atexit
import json
import os
import subprocess
import time

from qs_support import binaries


def daemon():
    return binaries.path("quicstepd")


def control():
    return binaries.path("quicstepctl")


# `ip netns exec` gives the daemon a private /sys (so a bpffs it mounts at /sys/fs/bpf would
# vanish with it): the lab's guard pins on a bpffs mounted here, in the host's view, which the
# daemon's mount namespace inherits.
LAB_BPFFS = "/run/qs-lab-bpf"
GUARD_PIN_DIR = LAB_BPFFS + "/quicstep"


def write_config(path, interface, addressing=None, extra="", native_path=None):
    """quicstepd's config for the lab's channel `interface`. addressing None: QSD_ADDRESSING
    from the environment (a suite runs once per mode), else the daemon's default (no line).
    native_path None: QSD_NATIVE_PATH (queue or routed), else the daemon's default ("auto":
    routed for stateless addressing); where it may be routed, the guard pins on the lab's
    bpffs. `extra`: TOML appended."""
    addressing = addressing or os.environ.get("QSD_ADDRESSING")
    line = f'addressing = "{addressing}"\n' if addressing else ""
    native = native_path or os.environ.get("QSD_NATIVE_PATH")
    if native not in (None, "", "queue", "routed"):
        raise ValueError(f"native path {native!r}: queue, routed or unset (the default)")
    if "native_path" not in extra:
        if native:
            line += f'native_path = "{native}"\n'
        if native != "queue" and addressing in (None, "stateless"):
            line += f'guard_pin_dir = "{mount_lab_bpffs()}"\n'
    channel = f'channel_interface = "{interface}"\n' if interface else ""  # None: tproxy
    with open(path, "w") as f:
        f.write(f'[daemon]\n{channel}{line}metrics_listen = "127.0.0.1:9464"\n{extra}')
    return path


def detach_guard(device, links=("egress", "ingress")):
    """Detaches the routed path's guard from `device` as another tool would (`bpftool link
    detach`): its tcx links, found by their pins under GUARD_PIN_DIR (the pins stay, the
    links are defunct); links=("channel",): the channel device's UDP source rewrite. A
    clsact guard is the caller's to delete (`tc filter del`). Returns how many links were
    detached."""
    detached = 0
    for direction in links:
        pin = f"{GUARD_PIN_DIR}/link_{device}_{direction}"
        shown = subprocess.run(["bpftool", "-j", "link", "show", "pinned", pin],
                               capture_output=True, text=True)
        try:
            link_id = json.loads(shown.stdout)["id"]
        except (ValueError, KeyError, TypeError):
            continue
        if subprocess.run(["bpftool", "link", "detach", "id", str(link_id)],
                          capture_output=True).returncode == 0:
            detached += 1
    return detached


def ctl(netns, sock, *args, check=True):
    """quicstepctl --socket SOCK ARGS... inside `netns`."""
    res = subprocess.run(["ip", "netns", "exec", netns, control(), "--socket", sock, *args],
                         capture_output=True, text=True, timeout=20)
    if check and res.returncode != 0:
        raise AssertionError(f"quicstepctl {args}: {res.returncode} {res.stderr}")
    return res


def wait_daemon(netns, sock, proc, timeout=15):
    """Waits until the daemon started as `proc` answers on its control socket."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"quicstepd exited with {proc.returncode}")
        if ctl(netns, sock, "status", "--json", check=False).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("quicstepd did not answer on its control socket")


def _bpffs_mounted():
    with open("/proc/self/mounts") as f:
        return any(line.split(" ")[1:3] == [LAB_BPFFS, "bpf"] for line in f if line.strip())


def mount_lab_bpffs():
    """Mounts the lab's bpffs (once) and returns the guard's pin directory on it. Unmounted
    when this process exits, if the caller has not done so."""
    os.makedirs(LAB_BPFFS, exist_ok=True)
    if not _bpffs_mounted():
        subprocess.run(["mount", "-t", "bpf", "bpf", LAB_BPFFS], check=True)
        atexit.register(unmount_lab_bpffs)
    return GUARD_PIN_DIR


def unmount_lab_bpffs():
    """Unmounts the lab's bpffs (at the end of a run; --cleanup has removed the pins)."""
    if _bpffs_mounted():
        subprocess.run(["umount", LAB_BPFFS], check=False)
    try:
        os.rmdir(LAB_BPFFS)
    except OSError:
        pass


RULE_PRIORITIES = range(10000, 11000)  # quicstepd's ip rules (RoutingSpec)


def rule_words(r):
    """`ip rule add` arguments re-creating a rule from `ip -j rule show` (a fault that flushes
    the rules puts back those that are not quicstepd's)."""
    words = ["priority", str(r["priority"])]
    if r.get("src") and r["src"] != "all":
        words += ["from", f"{r['src']}/{r['srclen']}" if "srclen" in r else r["src"]]
    if r.get("dst") and r["dst"] != "all":
        words += ["to", f"{r['dst']}/{r['dstlen']}" if "dstlen" in r else r["dst"]]
    if "fwmark" in r:
        words += ["fwmark", r["fwmark"] + (f"/{r['fwmask']}" if "fwmask" in r else "")]
    if r.get("not"):
        words = ["not", *words]
    if "table" in r:
        words += ["lookup", str(r["table"])]
    elif r.get("action") == "unreachable":
        words += ["unreachable"]
    return words
