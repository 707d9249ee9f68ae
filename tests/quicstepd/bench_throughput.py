#!/usr/bin/env python3
"""Bulk download and upload throughput through quicstepd, side by side with the paper's
kernel-only rules (rules/paper_rules.sh) and the plain native path, in one run (this machine
is noisy: modes are interleaved round by round, medians reported). Also the daemon's CPU
seconds per GB, and the whole machine's busy CPU seconds per GB (with its busy share): where
native already keeps both cores busy, native's CPU per GB over a mode's is the rate that mode
can reach. A benchmark, not a timed test: root, lab profile `none` (no emulation) unless
--profile names another.

    sudo python3 -m tests.quicstepd.bench_throughput [--sizes 100,1000] [--rounds 5] [--json out.json]

Each transfer is a fresh connection, so its time is a fixed per-connection cost (handshake
through the channel, the move to the native path and the server's reaction to it) plus
size / bulk rate. With two sizes the benchmark reports both per round: the bulk rate
(S2 - S1) / (t2 - t1) and the fixed cost t1 - S1 / rate; at 2 Gbit/s a 100 MB transfer
lasts 0.4 s, so a one-off 50 ms costs it 12%.

The paper's mode keeps the client's native source address on channel packets: the lab's
provider accepts only the tunnel address, so for that mode the benchmark temporarily adds
the client's native prefixes to the provider peer's allowed IPs (restored afterwards).

The `tun` mode is quicstep-tun, the TUN engine (client/tun): the client's routes go into its
TUN and it carries its own WireGuard channel with the lab client's key (qs_support/
tun_engine.py: the lab's channel interface loses its peer meanwhile). Its CPU is the engine's
and its helper's."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

from qs_support import tun_engine
from tests.quicstepd import qsd_helpers as h
from tests.lab import lab_helpers

PAPER_RULES = os.path.join(h.REPO, "rules", "paper_rules.sh")

# quicstep-tun's modes and their extra options: tun is the default (with its kernel fast path
# for confirmed flows where the kernel has tcx); tun-nofastpath relays every packet through
# the engine, as Android's engine does.
TUN_MODES = {"tun": [], "tun-nooffload": ["--no-offload"], "tun-nofastpath": ["--no-fast-path"]}
# quicstepd modes: addressing, native path (None: the daemon's default, "auto") and extra
# config lines.
QSD_MODES = {
    # The daemon's default config: stateless addressing, native_path "auto" (routed).
    "quicstepd-default": (None, None, ""),
    "quicstepd": ("nat", None, ""),  # nat: the queue path ("auto" has no other)
    "quicstepd-permissive": ("permissive", None, ""),
    # The queue path with stateless addressing (the default config until stop 21).
    "quicstepd-stateless": ("stateless", "queue", ""),
    # Holds: a flow's first short headers stay on the channel (3 packets, or 5 ms), so that
    # they do not overtake the client's Finished (client/README.md, "Figures and the commands that measure them").
    "quicstepd-hold3": ("stateless", "queue", "[hold]\npackets = 3\n"),
    "quicstepd-hold5ms": ("stateless", "queue", "[hold]\ntime_ms = 5\n"),
    # The native switch off: a moved flow's first native packets leave at once (and may
    # overtake the Finished on the channel).
    "quicstepd-noswitch": ("stateless", "queue", "[native_switch]\nenabled = false\n"),
    "quicstepd-switch100": ("stateless", "queue", "[native_switch]\nrtt_percent = 100\n"),
    # GSO super-packets of native flows decided in the kernel (the line lands in [daemon]:
    # write_config appends extra right after that table's lines).
    "quicstepd-gso-kernel": ("stateless", "queue", "native_gso = \"kernel\"\n"),
    # The routed native path written out: per-flow ip rules and the tc guard, no netfilter
    # on native packets (its guard pins on the lab's bpffs: `ip netns exec` hides
    # /sys/fs/bpf).
    "quicstepd-routed": ("stateless", "routed", ""),
    # ... with the native switch off: a moved flow's rule goes in at its first short header.
    "quicstepd-routed-noswitch": ("stateless", "routed", "[native_switch]\nenabled = false\n"),
    # ... with the hold at the switch: a flow's short headers wait in a queue from the first
    # until its switch, as on the queue path.
    "quicstepd-routed-hold": ("stateless", "routed", "[native_switch]\nhold = true\n"),
}

# Decomposition (--modes paper+ipt,...): the paper's rules plus ONE kernel feature that
# quicstepd's ruleset uses, so that each feature's cost is a difference measured in the
# same run. None of these extras matches or changes a packet of the benchmark.
EXTRA_NFT = {
    # conntrack hooks active (a ct expression anywhere registers them), no NAT hooks
    "ct": """table inet qsb_x {
  chain c { type filter hook output priority 0; ct state invalid counter; }
}""",
    # conntrack + NAT hooks (a nat chain whose rule matches nothing here)
    "nat": """table inet qsb_x {
  chain c { type nat hook postrouting priority srcnat; oifname "qsb-none" masquerade; }
}""",
    # a 4-tuple set lookup and update (refresh) per outgoing QUIC packet
    "set": """table inet qsb_x {
  set s4 { type ipv4_addr . inet_service . ipv4_addr . inet_service; flags dynamic,timeout;
           timeout 120s; size 65536; }
  chain c {
    type filter hook output priority -305;
    udp dport 443 ip saddr . udp sport . ip daddr . udp dport @s4 counter
    udp dport 443 update @s4 { ip saddr . udp sport . ip daddr . udp dport }
  }
}""",
    # one more base chain with three mark compares (the accounting chain)
    "acct": """table inet qsb_x {
  chain c {
    type filter hook output priority -250;
    meta mark & 0xff == 0x71 counter accept
    meta mark & 0xff == 0x72 counter accept
    meta mark & 0xff == 0x73 counter accept
  }
}""",
    # the stateless rewrite (addressing = "stateless") instead of masquerade: an output chain
    # reached only by channel marks, a prerouting chain only by the channel interface
    "srw": """table inet qsb_x {
  map r4 { type inet_service . inet_service . ipv4_addr : ipv4_addr; flags dynamic,timeout;
           timeout 120s; size 65536; }
  chain c { type filter hook output priority -250; meta mark & 0xff vmap { 0x71 : goto rw }; }
  chain rw {
    ip saddr != 10.99.0.2 meta l4proto { tcp, udp } update @r4 { th sport . th dport . ip daddr : ip saddr }
    ip saddr != 10.99.0.2 ip saddr set 10.99.0.2
  }
  chain i { type filter hook prerouting priority -310; iifname "qsb-none" goto back; }
  chain back {
    ip daddr 10.99.0.2 meta l4proto { tcp, udp } ip daddr set th dport . th sport . ip saddr map @r4
  }
}""",
}
# iptables-nft raw chains with an NFQUEUE rule that matches nothing (the queue hop).
EXTRA_IPT = ("*raw\n:QSB_OUT - [0:0]\n:QSB_IN - [0:0]\n-A QSB_OUT -m mark --mark 0x73/0xff "
             "-j NFQUEUE --queue-num 7 --queue-bypass\n-A QSB_IN -m mark --mark 0x74/0xff -j "
             "NFQUEUE --queue-num 8 --queue-bypass\n-I OUTPUT 1 -j QSB_OUT\n-I PREROUTING 1 "
             "-j QSB_IN\nCOMMIT\n")


def machine_cpu():
    """The machine's busy and elapsed CPU seconds over all cores so far (/proc/stat: user,
    nice, system, irq, softirq are busy; idle, iowait and a hypervisor's steal are not)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    busy = user + nice + system + irq + softirq
    return busy / tick, (busy + idle + iowait + steal) / tick


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bench:
    def __init__(self, args):
        self.args = args
        self.mode = None  # the mode being measured (names its client qlog directory)
        self.work = tempfile.mkdtemp(prefix="qsd-bench-")
        os.chmod(self.work, 0o755)
        self.procs = h.Procs()
        self.daemon = None

    def setup(self):
        h.wait_lab_idle()
        lab_helpers.qslab("up", "--profile", self.args.profile, timeout=180)
        self.lab = lab_helpers.status()
        c = self.lab["client"]
        self.ns = c["netns"]
        srv = self.lab["servers"][0]
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        self.srv = first(srv["v4"])
        for size in self.args.sizes:
            htdocs, key, cert = h.make_site(self.work, size)
        qlog = [f"--qlog-dir={self.args.server_qlog}"] if self.args.server_qlog else []
        if self.args.server_qlog:
            os.makedirs(self.args.server_qlog, exist_ok=True)  # gtlsserver will not make it
        self.server = self.procs.start(srv["netns"], ["gtlsserver", "--quiet", *qlog, f"--htdocs={htdocs}",
                                        "*", "443", key, cert],
                         os.path.join(self.work, "server.log"))
        self.htdocs = htdocs
        h.mount_lab_bpffs()
        self.configs = {}
        for mode, (addressing, path, extra) in QSD_MODES.items():
            self.configs[mode] = h.write_config(os.path.join(self.work, f"{mode}.toml"),
                                                c["channel"]["interface"], addressing, extra,
                                                native_path=path)
        self.sock = os.path.join(self.work, "control.sock")
        p = self.lab["provider"]
        self.prov_ns, self.prov_if = p["netns"], p["wg_interface"]
        out = subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "show", self.prov_if,
                              "allowed-ips"], capture_output=True, text=True, check=True).stdout
        self.peer, allowed = out.split("\t", 1)
        self.allowed = ",".join(allowed.split())
        self.native_prefixes = "198.18.1.0/24,2001:db8:1::/64"
        self.helper_pid = None
        time.sleep(0.5)

    def in_ns(self, *cmd, stdin=None):
        subprocess.run(["ip", "netns", "exec", self.ns, *cmd], input=stdin, text=True,
                       check=True)

    def mode_up(self, mode):
        base, _, extra = mode.partition("+")
        if not extra:
            # No mode inherits another's path-MTU exceptions (a route's MTU learnt for 10
            # minutes: a build whose channel's refusals set the native route's did so for
            # every mode after it).
            for fam in ("-4", "-6"):
                self.in_ns("ip", fam, "route", "flush", "cache")
        if base == "paper" and extra:
            self.mode_up("paper")
            if extra == "ipt":
                for tool in ("iptables-nft-restore", "ip6tables-nft-restore"):
                    self.in_ns(tool, "--noflush", stdin=EXTRA_IPT)
            else:
                self.in_ns("nft", "-f", "-", stdin=EXTRA_NFT[extra] + "\n")
            return
        if mode in ("paper", "quicstepd-permissive"):  # the provider must accept native sources
            subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "set", self.prov_if, "peer",
                            self.peer, "allowed-ips", self.allowed + "," + self.native_prefixes],
                           check=True)
        if mode == "paper":
            subprocess.run(["ip", "netns", "exec", self.ns, PAPER_RULES, "up"], check=True)
        elif mode in TUN_MODES:
            extra = TUN_MODES[mode]
            self.daemon = tun_engine.start(self.procs, self.lab, self.work, self.sock, extra)
            self.helper_pid = tun_engine.helper_pid(self.daemon.pid)
        elif base.startswith("quicstepd"):
            binary = mode.split("=", 1)[1] if "=" in mode else h.QSD
            config = self.configs.get(mode, self.configs["quicstepd-default"])
            self.daemon = self.procs.start(self.ns, [binary, "--config", config, "--control",
                                                     self.sock, "--log-level", "warn"],
                                           os.path.join(self.work, "quicstepd.log"))
            h.wait_daemon(self.ns, self.sock, self.daemon)

    def mode_down(self, mode):
        base, _, extra = mode.partition("+")
        if base == "paper" and extra:
            if extra == "ipt":
                for fam in ("ip", "ip6"):
                    subprocess.run(["ip", "netns", "exec", self.ns, "nft", "delete", "table",
                                    fam, "raw"])
            else:
                subprocess.run(["ip", "netns", "exec", self.ns, "nft", "delete", "table", "inet",
                                "qsb_x"])
            self.mode_down("paper")
            return
        if mode == "paper":
            subprocess.run(["ip", "netns", "exec", self.ns, PAPER_RULES, "down"], check=True)
            subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "set", self.prov_if, "peer",
                            self.peer, "allowed-ips", self.allowed], check=True)
        elif mode in TUN_MODES and self.daemon:
            tun_engine.stop(self.procs, self.lab, self.daemon)
            self.daemon, self.helper_pid = None, None
        elif base.startswith("quicstepd") and self.daemon:
            self.procs.stop(self.daemon)
            self.daemon = None
        if mode == "quicstepd-permissive":
            subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "set", self.prov_if, "peer",
                            self.peer, "allowed-ips", self.allowed], check=True)

    def transfer(self, direction, size):
        out_dir = os.path.join("/dev/shm", f"qsd-bench-{os.getpid()}")
        os.makedirs(out_dir, exist_ok=True)
        cmd = ["timeout", "-k", "5", "300", "gtlsclient", "--quiet", "--exit-on-all-streams-close",
               "--timeout=30s", "--max-data=1G", "--max-stream-data-bidi-local=1G",
               f"--cc={self.args.client_cc}"]
        if self.args.client_qlog:
            qlog_dir = os.path.join(self.args.client_qlog, self.mode)
            os.makedirs(qlog_dir, exist_ok=True)  # gtlsclient will not make it
            cmd.append(f"--qlog-dir={qlog_dir}")
        if direction == "download":
            cmd += [f"--download={out_dir}", self.srv, "443",
                    f"https://open.test/{size}M.bin"]
        else:
            cmd += [f"--data={os.path.join(self.htdocs, f'{size}M.bin')}", self.srv, "443",
                    "https://open.test/upload"]
        t0 = time.time()
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)  # the client's CPU (and its reaped children)
        took = time.time() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        got = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
        subprocess.run(["rm", "-rf", out_dir])
        if p.returncode != 0:
            raise RuntimeError(f"{direction} of {size} MB failed (gtlsclient exit "
                               f"{p.returncode}): {err[-500:]}")
        # gtlsclient exits 0 when its handshake times out: a rate needs the bytes.
        if self.server.poll() is not None:
            raise RuntimeError(f"gtlsserver exited ({self.server.returncode}); see server.log")
        if direction == "download" and got != size * 1000 * 1000:
            raise RuntimeError(f"download of {size} MB brought {got} bytes")
        return took, usage.ru_utime + usage.ru_stime, usage.ru_stime

    def run(self):
        modes, sizes = self.args.modes, self.args.sizes
        # seconds[direction][size][mode]: one transfer time per round.
        seconds = {d: {z: {m: [] for m in modes} for z in sizes} for d in ("download", "upload")}
        # The client's CPU seconds per GB (user+sys, and sys alone: the kernel's rule
        # evaluation for sent packets runs in the sender's system time), largest size.
        client_cpu = {d: {m: [] for m in modes} for d in ("download", "upload")}
        client_sys = {d: {m: [] for m in modes} for d in ("download", "upload")}
        cpu = {m: {"seconds": 0.0, "bytes": 0} for m in modes}
        # The whole machine's busy CPU seconds per GB and its busy share during the largest
        # transfers: on this 2-core machine the client, the server and the mode's processes
        # share the cores, so where native already keeps them busy, what a mode adds per GB
        # bounds its rate (native's CPU per GB / the mode's).
        machine = self.machine = {d: {m: [] for m in modes} for d in ("download", "upload")}
        # batching[direction][mode]: the TUN engine's counters over the largest transfers.
        batching = self.batching = {}
        for r in range(self.args.rounds):
            k = r % len(modes)
            for m in modes[k:] + modes[:k]:  # rotate the order round by round
                self.mode = m
                self.mode_up(m)
                try:
                    for d in ("download", "upload"):
                        for z in sizes:
                            c0 = self.daemon_cpu()
                            e0 = self.engine_counters(m)
                            b0, w0 = machine_cpu()
                            try:
                                took, cpu_s, sys_s = self.transfer(d, z)
                            except RuntimeError as e:
                                raise RuntimeError(f"mode {m}, round {r}: {e}") from None
                            seconds[d][z][m].append(took)
                            if z == sizes[-1]:
                                b1, w1 = machine_cpu()
                                machine[d][m].append(((b1 - b0) / (z / 1000),
                                                      (b1 - b0) / max(1e-9, w1 - w0)))
                                client_cpu[d][m].append(cpu_s / (z / 1000))
                                client_sys[d][m].append(sys_s / (z / 1000))
                            if e0 and z == sizes[-1]:
                                e1 = self.engine_counters(m)
                                acc = batching.setdefault(d, {}).setdefault(m, {})
                                for key in e1:
                                    acc[key] = acc.get(key, 0) + e1[key] - e0[key]
                            if self.daemon:
                                cpu[m]["seconds"] += self.daemon_cpu() - c0
                                cpu[m]["bytes"] += z * 1_000_000
                finally:
                    self.mode_down(m)
        return seconds, cpu, client_cpu, client_sys

    def engine_counters(self, mode):
        """The TUN engine's loop counters that say how much work each wake-up, relay read
        and TUN write carried (None for the other modes)."""
        if mode not in TUN_MODES or not self.daemon:
            return None
        st = tun_engine.status(self.sock)
        native = st["paths"]["native"]
        keys = ("wakeups", "timer_arms", "timer_wakeups", "relay_reads", "relay_gro_reads",
                "tun_gso_writes", "tun_gso_segments", "relay_gso_sends", "relay_gso_segments")
        return {"from_native": native["in_packets"], "to_native": native["packets"],
                **{k: st["loop"][k] for k in keys}}

    def daemon_cpu(self):
        """The CPU seconds of the mode's own processes: quicstepd, or the TUN engine and its
        WireGuard helper."""
        if not self.daemon:
            return 0
        return cpu_seconds(self.daemon.pid) + (cpu_seconds(self.helper_pid)
                                               if self.helper_pid else 0)

    def teardown(self):
        self.procs.stop_all()
        h.unmount_lab_bpffs()
        lab_helpers.qslab("down", check=False, timeout=120)
        subprocess.run(["rm", "-rf", self.work])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000",
                    help="comma-separated MB per transfer; two or more: bulk rate and fixed cost")
    ap.add_argument("--server-qlog", help="directory for gtlsserver's qlog files (diagnosis)")
    ap.add_argument("--client-qlog",
                    help="directory for gtlsclient's qlog files, a subdirectory per mode "
                         "(diagnosis: the sender's window, RTT and losses on an upload)")
    ap.add_argument("--client-cc", default="cubic", choices=("cubic", "reno", "bbr", "bbr2"),
                    help="gtlsclient's congestion controller (default cubic, its own default; "
                         "its cubic and reno cap the window at 2.89x the delivery rate times "
                         "the minimum RTT, which a path whose RTT grows under load feels)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", default="none",
                    help="lab link profile (lab/qslab profiles); none: no emulation, the "
                         "machine's own rates (the throughput lines); london-ohio etc.: the "
                         "per-connection cost a user sees over those delays (use small --sizes)")
    ap.add_argument("--json")
    ap.add_argument("--modes", default="native,paper,quicstepd-default,quicstepd-stateless",
                    help="comma-separated; quicstepd-default is the daemon's default config "
                         "(stateless addressing, routed native path); quicstepd is addressing = "
                         "nat; also quicstepd-permissive (no NAT: no conntrack), "
                         "quicstepd-stateless (the queue path: nft rewrite, no conntrack), "
                         "quicstepd-noswitch (queue path, native switch off), quicstepd-switch100 "
                         "(it waits a whole RTT), quicstepd-hold3 (queue path + a 3-packet hold), "
                         "quicstepd-hold5ms, quicstepd-gso-kernel (queue path + native_gso = "
                         "kernel), quicstepd-routed (native_path = routed written out), "
                         "quicstepd-routed-noswitch, quicstepd-routed-hold (routed, the hold "
                         "at the switch), tun (quicstep-tun, the TUN engine), "
                         "tun-nooffload (quicstep-tun --no-offload), tun-nofastpath "
                         "(quicstep-tun --no-fast-path: every packet crosses the engine, as "
                         "on Android), "
                         "quicstepd=BINARY (another build, default "
                         "config), paper+ct, paper+nat, paper+set, "
                         "paper+acct, paper+srw, paper+ipt (the paper's rules plus one of quicstepd's "
                         "kernel features)")
    args = ap.parse_args()
    args.modes = args.modes.split(",")
    args.sizes = sorted({int(x) for x in args.sizes.split(",")})
    for m in args.modes:
        base, _, extra = m.partition("+")
        if base.startswith("quicstepd="):
            continue
        if base not in ("native", "paper", *TUN_MODES, *QSD_MODES) or (
                extra and (base != "paper" or extra not in {*EXTRA_NFT, "ipt"})):
            ap.error(f"unknown mode {m}")
    b = Bench(args)
    try:
        b.setup()
        seconds, cpu, client_cpu, client_sys = b.run()
    finally:
        b.teardown()
    summary = {"sizes_mb": args.sizes, "rounds": args.rounds, "client_cc": args.client_cc,
               "seconds": seconds,
               "daemon_cpu_s_per_gb": {m: c["seconds"] / max(1e-9, c["bytes"] / 1e9)
                                       for m, c in cpu.items() if c["bytes"]}}
    summary["client_cpu_s_per_gb"] = client_cpu
    summary["client_sys_s_per_gb"] = client_sys
    for d in client_cpu:
        cmed = {m: statistics.median(v) for m, v in client_cpu[d].items()}
        smed = {m: statistics.median(v) for m, v in client_sys[d].items()}
        summary.setdefault("median_client_cpu_s_per_gb", {})[d] = cmed
        summary.setdefault("median_client_sys_s_per_gb", {})[d] = smed
        print(f"{d:8s} client CPU s/GB ({args.sizes[-1]} MB) " + "  ".join(
            f"{m} {cmed[m]:.2f} (sys {smed[m]:.2f})" for m in cmed))

    summary["machine_cpu"] = b.machine
    for d, per_mode in b.machine.items():
        med = {m: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
               for m, v in per_mode.items() if v}
        summary.setdefault("median_machine_cpu_s_per_gb", {})[d] = {m: c[0] for m, c in med.items()}
        print(f"{d:8s} machine CPU s/GB ({args.sizes[-1]} MB) " + "  ".join(
            f"{m} {c[0]:.2f} (busy {100 * c[1]:.0f}%" +
            (f", native/this {med['native'][0] / c[0]:.2f}" if "native" in med and m != "native"
             else "") + ")" for m, c in med.items()))

    def table(title, per_mode, unit, fmt="6.0f"):
        med = {m: statistics.median(v) for m, v in per_mode.items()}
        print(f"{title}: {unit} per round, median, median ratio to paper and to native")
        for m, v in per_mode.items():
            ratios = "".join(f"  /{ref} {med[m] / med[ref]:.3f}" for ref in ("paper", "native")
                             if ref in med and med[ref] > 0)
            print(f"  {m[:28]:28s} " + " ".join(f"{x:{fmt}}" for x in v) +
                  f"   median {med[m]:7.1f}{ratios}")
        return med

    for d in seconds:
        for z in args.sizes:
            mbit = {m: [z * 8 / t for t in v] for m, v in seconds[d][z].items()}
            summary.setdefault("median_mbit_s", {}).setdefault(d, {})[z] = table(
                f"{d} {z} MB", mbit, "Mbit/s")
        if len(args.sizes) >= 2:
            z1, z2 = args.sizes[0], args.sizes[-1]
            rate, fixed = {}, {}
            for m in seconds[d][z1]:
                pairs = list(zip(seconds[d][z1][m], seconds[d][z2][m]))
                rate[m] = [(z2 - z1) * 8 / max(1e-6, t2 - t1) for t1, t2 in pairs]
                fixed[m] = [1000 * (t1 - z1 * 8 / r) for (t1, _), r in zip(pairs, rate[m])]
            summary.setdefault("median_bulk_mbit_s", {})[d] = table(
                f"{d} bulk rate ({z1}->{z2} MB)", rate, "Mbit/s")
            summary.setdefault("median_fixed_ms", {})[d] = table(
                f"{d} fixed cost per connection", fixed, "ms", "6.1f")
    # How much work one wake-up of the engine carried: the lever on its CPU per GB.
    summary["engine_batching"] = b.batching
    for d, per_mode in b.batching.items():
        for m, c in per_mode.items():
            dgrams = c["from_native"] if d == "download" else c["to_native"]
            print(f"{d:8s} {m} batching ({args.sizes[-1]} MB transfers): "
                  f"{dgrams / max(1, c['wakeups']):.1f} datagrams per wake-up "
                  f"({c['timer_wakeups']} by the timer, {c['timer_arms']} timer arms), "
                  f"{c['from_native'] / max(1, c['relay_reads']):.1f} per relay read "
                  f"({c['relay_gro_reads']} of {c['relay_reads']} reads held > 1), "
                  f"{c['tun_gso_segments'] / max(1, c['tun_gso_writes']):.1f} per TUN GSO write "
                  f"({c['tun_gso_writes']} writes), "
                  f"{c['relay_gso_segments'] / max(1, c['relay_gso_sends']):.1f} per relay GSO "
                  f"send ({c['relay_gso_sends']} sends)")
    for m, per_gb in summary["daemon_cpu_s_per_gb"].items():
        print(f"{m} CPU (quicstepd; for tun the engine and its helper): {per_gb:.4f} s per GB "
              "transferred" + (" (below /proc's 10 ms resolution: the daemon sees only each "
                               "flow's first packets)" if per_gb == 0 else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
