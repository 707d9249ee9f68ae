#!/usr/bin/env python3
"""Benchmark: quicstep-scan's domains per second against the lab population with an RTT,
and the projected time for a million domains (root; measurement/scan/README.md, Benchmark).

The population mixes domains as the paper found the top 1M ("QUICstep: Evaluating connection
migration based QUIC censorship circumvention", §4.2): --quic-share of them answer QUIC (22%; spread over every behaviour of quicstep-server,
Retry on and off, and gtlsserver with --with-gtlsserver), the rest do not. Non-QUIC domains are the costly ones: a
silent address holds a connection slot for the whole handshake timeout, so by default all
of them are silent (UDP dropped: the worst case; a real list also has NXDOMAIN and ICMP
answers, which cost less). Every packet between the prober and the servers is delayed
--one-way-ms each way by qs_delay_line (nfqueue; this kernel has no netem); DNS is not
delayed (a nearby caching resolver). By default names come from --static-hosts, not
DNS: the lab's dnsmasq (one thread, a 208 KB socket buffer this kernel does not let a
namespace raise) drops queries beyond a few hundred in flight, which would measure
dnsmasq; `--resolver dns` uses it anyway (then keep --concurrency near 150). The scan's classes are checked against the ground
truth: a speed bought with wrong answers would show as errors.

Ground truth: a lab server that exits during a scan (Debian's gtlsserver, ngtcp2 0.12.1's
example server, aborts on `Assertion 'gso_size' failed` in its Server::send_packet under
this load) makes its domains' truth unknown. Such domains are reported apart
(`truth_unknown`, with the server's last log lines) and never counted correct; `wrong` counts
only domains whose servers all ran to the end, and any of those fails the run. gtlsserver is
left out of the population unless --with-gtlsserver (it stays in the lab test
probe_scan_population, where it is classified right at a lower rate).

Projection: 1,000,000 / measured domains per second, i.e. the same mix, RTT, timeouts,
tries and machine. The paper's method: 500 quic_client processes, 5+ hours per million.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from measurement.scan import lab_population as lp
from measurement.scan.scanlib import records
from measurement.scan.scanlib.classes import classify

HERE = os.path.dirname(os.path.abspath(__file__))


def quic_groups(with_gtlsserver: bool):
    return [g.name for g in lp.GROUPS
            if g.backend == "qs" or (with_gtlsserver and g.backend == "gtls")]


def server_group(proc_name: str) -> str:
    """The group a lab server process serves: "full-retry-4" -> "full-retry"."""
    return "gtlsserver" if proc_name.startswith("gtlsserver-") else proc_name.rsplit("-", 1)[0]


def nfqueue_drops(ns: str) -> int:
    """Packets the kernel dropped at the delay line's nfqueues in `ns` (queue full, or the
    netlink message to qs_delay_line failed, e.g. ENOBUFS: the kernel then drops the packet
    itself), from /proc/net/netfilter/nfnetlink_queue: queue_dropped + queue_user_dropped."""
    text = lp.netns(ns, "cat", "/proc/net/netfilter/nfnetlink_queue", check=False).stdout
    total = 0
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 7:
            total += int(f[5]) + int(f[6])
    return total


def udp_errors(ns: str) -> int:
    """UDP datagrams the kernel dropped in `ns` because a socket's receive buffer was full
    (RcvbufErrors, IPv4 + IPv6): the prober's sockets in qs-prb-c, the servers' in qs-prb-s1."""
    total = 0
    text = lp.netns(ns, "cat", "/proc/net/snmp", check=False).stdout.splitlines()
    for head, vals in zip(text, text[1:]):
        if head.startswith("Udp:") and vals.startswith("Udp:") and "RcvbufErrors" in head:
            total += int(dict(zip(head.split(), vals.split()))["RcvbufErrors"])
    for line in lp.netns(ns, "cat", "/proc/net/snmp6", check=False).stdout.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "Udp6RcvbufErrors":
            total += int(f[1])
    return total


def log_tail(workdir: str, proc_name: str, lines: int = 3):
    try:
        with open(os.path.join(workdir, f"{proc_name}.log"), errors="replace") as f:
            return f.read().strip().splitlines()[-lines:]
    except OSError:
        return []


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--delay-line", required=True)
    ap.add_argument("--domains", type=int, default=2500)
    ap.add_argument("--quic-share", type=float, default=0.22)
    ap.add_argument("--one-way-ms", type=float, default=20.0, help="RTT = twice this")
    ap.add_argument("--timeout-ms", type=int, default=2000)
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0, help="0: one per core")
    ap.add_argument("--concurrency", type=int, default=1000)
    ap.add_argument("--resolver", choices=("static", "dns"), default="static")
    ap.add_argument("--per-24", type=int, default=0, help="prober --per-24 (0: no limit)")
    ap.add_argument("--probe-args", default="",
                    help="extra quicstep-scan options for --probe, e.g. '--first-answer-timeout-ms 1500'")
    ap.add_argument("--compare-probe", help="a second prober (e.g. an older build) run "
                    "alternately with --probe on the same population, for a side-by-side table")
    ap.add_argument("--compare-args", default="", help="extra options for --compare-probe")
    ap.add_argument("--also-with", action="append", default=[], metavar="ARGS",
                    help="another variant: --probe with these options (repeatable)")
    ap.add_argument("--rounds", type=int, default=1, help="scans per prober, alternated")
    ap.add_argument("--with-gtlsserver", action="store_true",
                    help="put Debian's gtlsserver into the QUIC share (it may abort under load)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    a.probe_args = a.probe_args.split()
    a.compare_args = a.compare_args.split()

    quic = round(a.domains * a.quic_share)
    counts = {g.name: 0 for g in lp.GROUPS}
    groups = quic_groups(a.with_gtlsserver)
    for i, name in enumerate(groups):
        counts[name] = quic // len(groups) + (i < quic % len(groups))
    counts["silent"] = a.domains - quic
    work = tempfile.mkdtemp(prefix="qs-prb-bench-")
    pop = lp.Population(work, a.server, counts=counts)
    pop.domains = [d for d in pop.domains if counts[d.group.name] > 0]
    a.group_of = {d.name: d.group.name for d in pop.domains}
    truth = pop.truth(second_address=True)
    try:
        pop.up()
        if a.one_way_ms > 0:
            pop.start_delay_line(a.delay_line, a.one_way_ms)
        rtt = lp.netns(lp.NS_C, "ping", "-c", "5", "-i", "0.2", "-q", "198.18.130.1",
                       check=False).stdout.strip().splitlines()[-1]
        variants = [("", a.probe, a.probe_args)]
        variants += [("", a.probe, extra.split()) for extra in a.also_with]
        if a.compare_probe:
            variants.insert(0, ("before: ", a.compare_probe, a.compare_args))
        status = 0
        table = []
        for rnd in range(a.rounds):
            for label, probe, extra in variants:
                out = os.path.join(work, f"scan{rnd}-{len(table)}")
                result = run_scan(a, pop, truth, quic, counts, rtt, out, probe, extra)
                if result is None:
                    return 1
                result["variant"] = (label or ("after: " if a.compare_probe else "")) + \
                    os.path.relpath(probe) + (" " + " ".join(extra) if extra else "")
                print(json.dumps(result, indent=1), flush=True)
                table.append(result)
                status |= 1 if result["wrong"] else 0
        if len(table) > 1:
            print("\n| variant | domains/s | steady | wrong | truth unknown | prober CPU | 1 M domains |")
            for r in table:
                print(f"| {r['variant']} | {r['domains_per_s']} | {r['steady_domains_per_s']}"
                      f" | {r['wrong']} | {r['truth_unknown']} | {r['prober_cpu_s']} s"
                      f" | {r['projected_1M_hours']} h"
                      f" ({r['projected_1M_hours_steady']} h steady) |")
        return status
    finally:
        pop.stop()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def run_scan(a, pop, truth, quic, counts, rtt, out, probe, extra):
    """One scan of the population with `probe` (+ extra prober options): the result dict,
    None when the scan failed."""
    cmd = ["ip", "netns", "exec", lp.NS_C, sys.executable, os.path.join(HERE, "quicstep-scan"),
           "run", pop.list_path, "--out", out, "--probe", probe, "--progress", "lines",
           "--workers", str(a.workers), "--timeout-ms", str(a.timeout_ms),
           *(["--dns", lp.D4] if a.resolver == "dns" else
             ["--static-hosts", pop.static_hosts_path]),
           "--tries", str(a.tries), "--concurrency", str(a.concurrency),
           "--per-24", str(a.per_24),
           "--second-local-address", lp.C4_2, "--second-local-address6", lp.C6_2, *extra]
    drops0 = {ns: nfqueue_drops(ns) for ns in (lp.NS_C, lp.NS_S)}
    rcvbuf0 = {ns: udp_errors(ns) for ns in (lp.NS_C, lp.NS_S)}
    cpu0 = os.times()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []  # (seconds, records written): the steady rate excludes ramp-up and tail
    results = os.path.join(out, "results.jsonl")
    while proc.poll() is None:
        time.sleep(0.25)
        if os.path.exists(results):
            with open(results, "rb") as f:
                samples.append((time.monotonic() - t0, f.read().count(b"\n")))
    stdout, stderr = proc.communicate()
    p = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    wall = time.monotonic() - t0
    drops = {ns: nfqueue_drops(ns) - drops0[ns] for ns in drops0}
    rcvbuf = {ns: udp_errors(ns) - rcvbuf0[ns] for ns in rcvbuf0}
    cpu1 = os.times()
    if p.returncode != 0:
        print(p.stderr[-3000:], file=sys.stderr)
        return None
    recs = records.load_latest(os.path.join(out, "results.jsonl"))
    got = {d: (classify(r).name, classify(r).port_migration) for d, r in recs.items()}
    # A server that exited: its group's domains have no known truth (see the docstring).
    exited = [name for name, proc in pop.procs if proc.poll() is not None]
    down_groups = {server_group(n) for n in exited}
    unknown = sorted(d for d in truth if a.group_of[d] in down_groups)
    mismatched = sorted(d for d in truth if got.get(d) != truth[d])
    wrong = [d for d in mismatched if a.group_of[d] not in down_groups]
    wrong_by_group = {}
    for d in mismatched:
        wrong_by_group[a.group_of[d]] = wrong_by_group.get(a.group_of[d], 0) + 1
    with open(os.path.join(out, "mismatched.json"), "w") as f:
        json.dump({d: {"group": a.group_of[d], "truth": truth[d], "got": got.get(d)}
                   for d in mismatched}, f, indent=1)
    rate = len(recs) / wall
    lo = next((t, n) for t, n in samples if n >= 0.1 * len(truth))
    hi = next((t, n) for t, n in samples if n >= 0.8 * len(truth))
    steady = (hi[1] - lo[1]) / (hi[0] - lo[0]) if hi[0] > lo[0] else rate
    children_cpu = (cpu1.children_user - cpu0.children_user
                    + cpu1.children_system - cpu0.children_system)
    result = {
        "domains": len(truth), "quic_domains": quic, "silent_domains": counts["silent"],
        "rtt_ping": rtt, "resolver": a.resolver, "one_way_ms": a.one_way_ms, "timeout_ms": a.timeout_ms,
        "tries": a.tries, "workers": a.workers or os.cpu_count(),
        "concurrency": a.concurrency, "per_24": a.per_24, "wall_s": round(wall, 1),
        "domains_per_s": round(rate, 1), "wrong": len(wrong), "wrong_examples": wrong[:5],
        # Domains of a server that exited: never counted correct; how many of them the
        # scan got different from the (no longer valid) truth.
        "truth_unknown": len(unknown), "truth_unknown_mismatched": len(set(unknown) & set(mismatched)),
        "mismatched_by_group": wrong_by_group,
        "prober_cpu_s": round(children_cpu, 1),
        "steady_domains_per_s": round(steady, 1),
        "projected_1M_hours": round(1e6 / rate / 3600, 2),
        "projected_1M_hours_steady": round(1e6 / steady / 3600, 2),
        "servers_exited": {n: log_tail(pop.workdir, n) for n in exited},
        # Packets the lab path (the delay line's nfqueues) dropped during this scan.
        "delay_line_kernel_drops": drops,
        # UDP receive-buffer overflows during the scan (qs-prb-c: prober, qs-prb-s1: servers).
        "udp_rcvbuf_errors": rcvbuf,
        "paper_1M_hours": 5.0,
        "speedup_vs_paper": round(5.0 * 3600 * rate / 1e6, 1),
    }
    print(p.stdout)
    return result


if __name__ == "__main__":
    sys.exit(main())
