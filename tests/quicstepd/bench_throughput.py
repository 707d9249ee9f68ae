#!/usr/bin/env python3
"""Bulk download and upload throughput through quicstepd, side by side with the paper's
kernel-only rules (rules/paper_rules.sh) and the plain native path, in one run (this machine
is noisy: modes are interleaved round by round, medians reported). Also the daemon's CPU
seconds per GB. A benchmark, not a timed test: root, lab profile `none` (no emulation).

    sudo tests/quicstepd/bench_throughput.py [--size-mb 100] [--rounds 5] [--json out.json]

The paper's mode keeps the client's native source address on channel packets: the lab's
provider accepts only the tunnel address, so for that mode the benchmark temporarily adds
the client's native prefixes to the provider peer's allowed IPs (restored afterwards)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qsd_helpers as h  # noqa: E402
from qsd_helpers import lab_helpers  # noqa: E402

PAPER_RULES = os.path.join(h.REPO, "rules", "paper_rules.sh")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="qsd-bench-")
        os.chmod(self.work, 0o755)
        self.procs = h.Procs()
        self.daemon = None

    def setup(self):
        h.wait_lab_idle()
        lab_helpers.qslab("up", "--profile", "none", timeout=180)
        self.lab = lab_helpers.status()
        c = self.lab["client"]
        self.ns = c["netns"]
        srv = self.lab["servers"][0]
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        self.srv = first(srv["v4"])
        htdocs, key, cert = h.make_site(self.work, self.args.size_mb)
        self.upload = os.path.join(htdocs, f"{self.args.size_mb}M.bin")
        self.procs.start(srv["netns"], ["gtlsserver", "--quiet", f"--htdocs={htdocs}", "*", "443",
                                        key, cert], os.path.join(self.work, "server.log"))
        self.config = h.write_config(os.path.join(self.work, "q.toml"), c["channel"]["interface"])
        self.sock = os.path.join(self.work, "control.sock")
        p = self.lab["provider"]
        self.prov_ns, self.prov_if = p["netns"], p["wg_interface"]
        out = subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "show", self.prov_if,
                              "allowed-ips"], capture_output=True, text=True, check=True).stdout
        self.peer, allowed = out.split("\t", 1)
        self.allowed = ",".join(allowed.split())
        self.native_prefixes = "198.18.1.0/24,2001:db8:1::/64"
        time.sleep(0.5)

    def mode_up(self, mode):
        if mode == "paper":
            subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "set", self.prov_if, "peer",
                            self.peer, "allowed-ips", self.allowed + "," + self.native_prefixes],
                           check=True)
            subprocess.run(["ip", "netns", "exec", self.ns, PAPER_RULES, "up"], check=True)
        elif mode == "quicstepd":
            self.daemon = self.procs.start(self.ns, [h.QSD, "--config", self.config, "--control",
                                                     self.sock, "--log-level", "warn"],
                                           os.path.join(self.work, "quicstepd.log"))
            h.wait_daemon(self.ns, self.sock, self.daemon)

    def mode_down(self, mode):
        if mode == "paper":
            subprocess.run(["ip", "netns", "exec", self.ns, PAPER_RULES, "down"], check=True)
            subprocess.run(["ip", "netns", "exec", self.prov_ns, "wg", "set", self.prov_if, "peer",
                            self.peer, "allowed-ips", self.allowed], check=True)
        elif mode == "quicstepd" and self.daemon:
            self.procs.stop(self.daemon)
            self.daemon = None

    def transfer(self, direction):
        out_dir = os.path.join("/dev/shm", f"qsd-bench-{os.getpid()}")
        os.makedirs(out_dir, exist_ok=True)
        cmd = ["timeout", "-k", "5", "300", "gtlsclient", "--quiet", "--exit-on-all-streams-close",
               "--timeout=30s", "--max-data=1G", "--max-stream-data-bidi-local=1G"]
        if direction == "download":
            cmd += [f"--download={out_dir}", self.srv, "443",
                    f"https://open.test/{self.args.size_mb}M.bin"]
        else:
            cmd += [f"--data={self.upload}", self.srv, "443", "https://open.test/upload"]
        t0 = time.time()
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)  # the client's CPU (and its reaped children)
        took = time.time() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        subprocess.run(["rm", "-rf", out_dir])
        if p.returncode != 0:
            raise RuntimeError(f"{direction} failed: {err[-500:]}")
        return took, usage.ru_utime + usage.ru_stime, usage.ru_stime

    def run(self):
        modes = ["native", "paper", "quicstepd"]
        results = {d: {m: [] for m in modes} for d in ("download", "upload")}
        # The client's CPU seconds per GB (user+sys, and sys alone: the kernel's rule
        # evaluation for sent packets runs in the sender's system time). Less noisy than
        # throughput on a shared machine.
        client_cpu = {d: {m: [] for m in modes} for d in ("download", "upload")}
        client_sys = {d: {m: [] for m in modes} for d in ("download", "upload")}
        cpu = {"seconds": 0.0, "bytes": 0}
        for r in range(self.args.rounds):
            for m in modes[r % 3:] + modes[:r % 3]:  # rotate the order round by round
                self.mode_up(m)
                try:
                    for d in ("download", "upload"):
                        c0 = cpu_seconds(self.daemon.pid) if self.daemon else 0
                        took, cpu_s, sys_s = self.transfer(d)
                        gb = self.args.size_mb / 1000
                        client_cpu[d][m].append(cpu_s / gb)
                        client_sys[d][m].append(sys_s / gb)
                        if self.daemon:
                            cpu["seconds"] += cpu_seconds(self.daemon.pid) - c0
                            cpu["bytes"] += self.args.size_mb * 1_000_000
                        results[d][m].append(self.args.size_mb * 8 / took)
                finally:
                    self.mode_down(m)
        return results, cpu, client_cpu, client_sys

    def teardown(self):
        self.procs.stop_all()
        lab_helpers.qslab("down", check=False, timeout=120)
        subprocess.run(["rm", "-rf", self.work])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    b = Bench(args)
    try:
        b.setup()
        results, cpu, client_cpu, client_sys = b.run()
    finally:
        b.teardown()
    summary = {"size_mb": args.size_mb, "rounds": args.rounds, "mbit_s": results,
               "daemon_cpu_s_per_gb": cpu["seconds"] / max(1e-9, cpu["bytes"] / 1e9)}
    summary["client_cpu_s_per_gb"] = client_cpu
    summary["client_sys_s_per_gb"] = client_sys
    for d in results:
        cmed = {m: statistics.median(v) for m, v in client_cpu[d].items()}
        smed = {m: statistics.median(v) for m, v in client_sys[d].items()}
        summary.setdefault("median_client_cpu_s_per_gb", {})[d] = cmed
        summary.setdefault("median_client_sys_s_per_gb", {})[d] = smed
        print(f"{d:8s} client CPU s/GB " + "  ".join(f"{m} {cmed[m]:.2f} (sys {smed[m]:.2f})"
                                                     for m in cmed))
    for d, per_mode in results.items():
        med = {m: statistics.median(v) for m, v in per_mode.items()}
        summary.setdefault("median_mbit_s", {})[d] = med
        print(f"{d:8s} " + "  ".join(f"{m} {v:7.1f} Mbit/s" for m, v in med.items()) +
              f"   quicstepd/paper {med['quicstepd'] / med['paper']:.3f}"
              f"  quicstepd/native {med['quicstepd'] / med['native']:.3f}")
    print(f"quicstepd CPU: {summary['daemon_cpu_s_per_gb']:.4f} s per GB transferred")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
