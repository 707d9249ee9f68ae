"""Helpers for the quicstepd lab tests: the daemon, captures, gtlsserver/gtlsclient, and
reading captures with quicstep-inspect. Processes are tracked and ended by PID only."""
import atexit
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))
import lab_helpers  # noqa: E402  (qslab, status, in_host, require_root)


def find_binary(env, name, subdir):
    if os.environ.get(env):
        return os.environ[env]
    for build in ("h-daemon", "release", "lead"):
        path = os.path.join(REPO, "build", build, subdir, name)
        if os.path.exists(path):
            return path
    raise AssertionError(f"{name} not built (set {env})")


QSD = find_binary("QSD_BIN", "quicstepd", "client")
QSCTL = find_binary("QSD_CTL", "quicstepctl", "client")
INSPECT = find_binary("QS_INSPECT", "quicstep-inspect", "measurement")
os.environ.setdefault("QSLAB_DELAY_LINE", find_binary("QSLAB_DELAY_LINE", "qs_delay_line", "lab"))


def wait_lab_idle(timeout=300):
    """The lab's namespaces have fixed names: wait while another lab test runs (there is
    no lab-wide lock yet)."""
    deadline = time.time() + timeout
    me = lab_helpers.ancestors()  # this test and what started it (a wrapper such as flock)
    while time.time() < deadline:
        busy = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            if int(pid) in me:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if ("unittest" in cmd and "test_lab" in cmd) or "make_captures.sh" in cmd:
                busy.append(pid)
        if not busy:
            return
        time.sleep(2)
    raise AssertionError("another lab test kept the lab busy")


class Procs:
    """Background processes started by a test, ended by PID (SIGINT, then SIGKILL)."""

    def __init__(self):
        self.procs = []

    def start(self, netns, argv, log_path):
        log = open(log_path, "w")
        p = subprocess.Popen(["ip", "netns", "exec", netns, *argv], stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGINT, timeout=10):
        """Signals the process; on a timeout, SIGKILLs its process group (its own session,
        started by us: the group id is its PID)."""
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        if p in self.procs:
            self.procs.remove(p)
        return p.returncode

    def stop_all(self):
        for p in list(reversed(self.procs)):
            self.stop(p)


def capture_started(path, seconds=10):
    """Waits until the tcpdump writing `path` (its log at path + ".log") printed
    "listening on" (its socket is bound); False if it did not within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        with open(path + ".log") as f:
            if "listening on" in f.read():
                return True
        time.sleep(0.05)
    return False


def start_capture(procs, netns, iface, path):
    p = procs.start(netns, ["tcpdump", "-i", iface, "-w", path, "-n", "-s", "0",
                            "-B", "131072"], path + ".log")
    if capture_started(path):
        return p
    raise AssertionError(f"tcpdump on {netns}/{iface} did not start")


def capture_drops(pcap_path):
    """Packets tcpdump reported dropped by the kernel (its log after it stopped)."""
    import re
    with open(pcap_path + ".log") as f:
        m = re.search(r"(\d+) packets dropped by kernel", f.read())
    return int(m.group(1)) if m else -1


def link_header_len(pcap_path):
    with open(pcap_path, "rb") as f:
        hdr = f.read(24)
    magic = hdr[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack(endian + "I", hdr[20:24])[0]
    return {1: 14, 101: 0, 12: 0, 228: 0, 229: 0, 113: 16, 276: 20}.get(linktype, 0)


def inspect(pcap_path):
    out = subprocess.run([INSPECT, pcap_path], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"quicstep-inspect {pcap_path}: {out.stderr}")
    link = link_header_len(pcap_path)
    packets = []
    for line in out.stdout.splitlines():
        if line.strip():
            p = json.loads(line)
            p["ip_len"] = p.get("wire_len", 0) - link
            packets.append(p)
    return packets


def leaks(packets, client_addrs):
    """Packets from the client that must never be on the native path."""
    bad = []
    for p in packets:
        if p.get("src") not in client_addrs:
            continue
        if p.get("proto") == "tcp":
            bad.append(("tcp", p))
        elif "dns" in p or 53 in (p.get("sport"), p.get("dport")):
            bad.append(("dns", p))
        elif any(q.get("form") == "long" for q in p.get("quic", [])):
            bad.append(("quic_long_header", p))
        elif p.get("tls", {}).get("sni"):
            bad.append(("sni", p))
    return bad


def quic_bytes(packets, server, port=443):
    """IP bytes of UDP packets between anyone and server:port, both directions."""
    return sum(p["ip_len"] for p in packets if p.get("proto") == "udp" and
               ((p.get("dst") == server and p.get("dport") == port) or
                (p.get("src") == server and p.get("sport") == port)))


def make_site(workdir, size_mb):
    htdocs = os.path.join(workdir, "htdocs")
    os.makedirs(htdocs, exist_ok=True)
    with open(os.path.join(htdocs, f"{size_mb}M.bin"), "wb") as f:
        f.write(os.urandom(size_mb * 1000 * 1000))
    key, cert, _ = lab_helpers.peers.make_certificate(workdir)
    return htdocs, key, cert


def write_config(path, interface, addressing=None, extra="", native_path=None):
    # addressing None: QSD_ADDRESSING from the environment (the suite runs once per mode),
    # else the daemon's default (no addressing line).
    addressing = addressing or os.environ.get("QSD_ADDRESSING")
    line = f'addressing = "{addressing}"\n' if addressing else ""
    # The native path: the daemon's default ("auto": routed for stateless addressing), or
    # native_path / QSD_NATIVE_PATH=queue|routed written out. Where it may be routed, the
    # guard pins on the lab's bpffs (see LAB_BPFFS).
    native = native_path or os.environ.get("QSD_NATIVE_PATH")
    if native not in (None, "", "queue", "routed"):
        raise ValueError(f"native path {native!r}: queue, routed or unset (the default)")
    if "native_path" not in extra:
        if native:
            line += f'native_path = "{native}"\n'
        if native != "queue" and addressing in (None, "stateless"):
            line += f'guard_pin_dir = "{mount_lab_bpffs()}"\n'
    with open(path, "w") as f:
        f.write(f'[daemon]\nchannel_interface = "{interface}"\n{line}'
                f'metrics_listen = "127.0.0.1:9464"\n{extra}')
    return path


def ctl(netns, sock, *args, check=True):
    res = subprocess.run(["ip", "netns", "exec", netns, QSCTL, "--socket", sock, *args],
                         capture_output=True, text=True, timeout=20)
    if check and res.returncode != 0:
        raise AssertionError(f"quicstepctl {args}: {res.returncode} {res.stderr}")
    return res


def wait_daemon(netns, sock, proc, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"quicstepd exited with {proc.returncode}")
        if ctl(netns, sock, "status", "--json", check=False).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("quicstepd did not answer on its control socket")


def kernel_state(netns):
    """What quicstepd may have installed: nft table, iptables rules (tagged with the comment
    quicstepd; user chains QUICSTEP_* in earlier versions), ip rules."""
    def run(*cmd):
        return subprocess.run(["ip", "netns", "exec", netns, *cmd], capture_output=True,
                              text=True).stdout
    tables = run("nft", "list", "tables")
    ip_rules = run("ip", "-4", "rule") + run("ip", "-6", "rule")
    return {
        "nft": "table inet quicstep" in tables or "table netdev quicstep" in tables,
        "iptables": any(tag in run(tool, "-t", "raw", "-S")
                        for tool in ("iptables-nft", "ip6tables-nft")
                        for tag in ("QUICSTEP", "--comment quicstepd ")),
        # The queue path's mark rules, the routed path's (its channel table, its flows).
        "rules": "fwmark 0x5" in ip_rules or "lookup 51821" in ip_rules
                 or any(f"{p}:" in ip_rules for p in range(10120, 10131)),
    }


# `ip netns exec` gives the daemon a private /sys (so a bpffs it mounts at /sys/fs/bpf would
# vanish with it): the lab's guard pins on a bpffs mounted here, in the host's view, which the
# daemon's mount namespace inherits.
LAB_BPFFS = "/run/qs-lab-bpf"
GUARD_PIN_DIR = LAB_BPFFS + "/quicstep"


def mount_lab_bpffs():
    """Mounts the lab's bpffs (once) and returns the guard's pin directory on it. Unmounted
    when this process exits, if the caller has not done so."""
    os.makedirs(LAB_BPFFS, exist_ok=True)
    with open("/proc/self/mounts") as f:
        mounts = f.read().split("\n")
    if not any(line.split(" ")[1:3] == [LAB_BPFFS, "bpf"] for line in mounts if line):
        subprocess.run(["mount", "-t", "bpf", "bpf", LAB_BPFFS], check=True)
        atexit.register(unmount_lab_bpffs)
    return GUARD_PIN_DIR


def unmount_lab_bpffs():
    """Unmounts the lab's bpffs (at the end of a run; --cleanup has removed the pins)."""
    with open("/proc/self/mounts") as f:
        mounted = any(line.split(" ")[1:3] == [LAB_BPFFS, "bpf"] for line in f if line.strip())
    if mounted:
        subprocess.run(["umount", LAB_BPFFS], check=False)
    try:
        os.rmdir(LAB_BPFFS)
    except OSError:
        pass


def guard_pinned():
    """Whether the routed native path's guard is pinned (its maps and links)."""
    return os.path.isdir(GUARD_PIN_DIR) and bool(os.listdir(GUARD_PIN_DIR))


def flow_rules(netns, priority=10120):
    """The routed native path's per-flow rules (`ip rule` lines at their priority)."""
    out = ""
    for fam in ("-4", "-6"):
        out += subprocess.run(["ip", "netns", "exec", netns, "ip", fam, "rule", "show",
                               "priority", str(priority)], capture_output=True,
                              text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def native_set_has(netns, server, port=443):
    """Whether the daemon's kernel fast path holds a flow to server:port (the native set
    of the server's family, written by the daemon over netlink)."""
    name = "native6" if ":" in server else "native4"
    out = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "set", "inet", "quicstep",
                          name], capture_output=True, text=True).stdout
    return f". {server} . {port}" in out


def watched_ports(netns):
    """The client ports in the daemon's watchports set (the watch set's gate): those of flows
    the watchdog still waits on."""
    out = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "set", "inet", "quicstep",
                          "watchports"], capture_output=True, text=True).stdout
    if "elements = {" not in out:
        return set()
    body = out.split("elements = {", 1)[1].split("}", 1)[0]
    return {int(p) for p in body.replace(",", " ").split()}


def native_packets_by_rule(netns):
    """The kernel's native-path packet counts (rules commented native_out): (in the bulk
    rule at the head of out_decide, in quic_out's rules). A decided flow's short headers
    should take the bulk rule but for the ~1 in 256 that refresh the set element."""
    def counted(chain):
        out = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "chain", "inet",
                              "quicstep", chain], capture_output=True, text=True).stdout
        return sum(int(line.split("counter packets")[1].split()[0]) for line in out.splitlines()
                   if 'comment "native_out"' in line and "counter packets" in line)
    return counted("out_decide"), counted("quic_out")


def cleanup_dir(path):
    shutil.rmtree(path, ignore_errors=True)
