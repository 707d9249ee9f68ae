#!/usr/bin/env python3
"""Concurrent migration benchmark: quicstep-load against quicstep-server with and without
SK_REUSEPORT steering, side by side in one run, in the throwaway namespaces of srvt_env.py
(root). From the repository's root:

  python3 -m server_testbed.bench.migration_bench --server BUILD/server_testbed/quicstep-server \
      --load BUILD/server_testbed/quicstep-load --delay-line BUILD/lab/qs_delay_line \
      --connections 10000 --rtt-ms 20

Per configuration (steering on, then off, same server and load settings):
 1. --processes quicstep-load processes (the hard descriptor limit here is 20,000 and cannot
    be raised without CAP_SYS_RESOURCE; each connection needs two sockets while it hands
    over) open --connections connections in total, at --rate per second. Each GETs --size
    bytes but grants only --migrate-after bytes of stream credit: the response stalls with
    data pending at the server, the connection stays open (keep-alive PINGs).
 2. When every process reports all its connections held, one SIGUSR1 to each releases them:
    every connection moves to a new local port (new socket) and credits the rest of the body
    on the new path. All connections migrate within a few hundred ms of each other.
 3. Handover per connection: first packet sent on the new path -> first response data
    received on it. Losses: the client's qlog (its packets that ngtcp2 declared lost; server
    packet numbers never received), plus the packets the server dropped as misdirected,
    plus kernel UDP drops (RcvbufErrors, NoPorts) in both namespaces and the delay line's.
With --rtt-ms > 0 the delay line (lab/delay_line.cpp, nfqueue) holds every packet on the
server's interface for rtt/2 in each direction, and handover is also given in RTTs.

Pinning: quicstep-server --pin puts worker i on CPU i % ncpu; load process k runs under
taskset on CPU k % ncpu; the delay line runs at SCHED_FIFO priority (as in the lab).
Prints one line per configuration and writes everything as JSON (--json).
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time

os.environ.setdefault("QS_SRVT_NS", "qs-srvb")  # its own pair: lab tests may run meanwhile
from server_testbed.bench import srvt_env as env  # noqa: E402  (reads QS_SRVT_NS)
from qs_support.stats import percentile as _percentile  # noqa: E402


def percentile(values, p):
    return _percentile(values, p, empty=-1)

def udp_counters(ns):
    """The namespace's UDP counters (/proc/net/snmp): {name: value}."""
    lines = [l.split() for l in env.netns(ns, "cat", "/proc/net/snmp").stdout.splitlines()
             if l.startswith("Udp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:])))


def softnet_dropped():
    """Packets the kernel dropped because a CPU's input backlog was full (all namespaces:
    veth delivers through the per-CPU backlog, net.core.netdev_max_backlog)."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(l.split()[1], 16) for l in f if l.strip())


def children_cpu_s():
    """CPU seconds (user + system) of the children waited for so far: taken around each
    component's wait, it gives that component's CPU (ip netns exec and taskset exec)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def diff(after, before):
    return {k: after[k] - before.get(k, 0) for k in after}


class DelayLine:
    """qs_delay_line in the server namespace: queue 1 holds packets arriving on the server's
    interface, queue 2 packets leaving it, each for rtt/2 (iptables NFQUEUE, as the lab)."""

    def __init__(self, binary, rtt_ms, workdir, rt_priority=20):
        half_us = int(rtt_ms * 500)
        self.stats = os.path.join(workdir, "delay_line.json")
        self.log = open(os.path.join(workdir, "delay_line.log"), "w+")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", env.NS_S, binary, "-q", f"1:{half_us}us", "-q",
             f"2:{half_us}us", "--rt-priority", str(rt_priority), "--stats-file", self.stats],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            self.log.seek(0)
            if "ready" in self.log.read():
                break
            if self.proc.poll() is not None:
                raise RuntimeError("qs_delay_line exited")
            time.sleep(0.05)
        for chain, flag, q in (("PREROUTING", "-i", 1), ("POSTROUTING", "-o", 2)):
            env.netns(env.NS_S, "iptables", "-w", "-t", "mangle", "-A", chain, flag, env.IF_S,
                      "-j", "NFQUEUE", "--queue-num", str(q), "--queue-bypass")

    def stop(self):
        env.netns(env.NS_S, "iptables", "-w", "-t", "mangle", "-F", check=False)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        try:
            with open(self.stats) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


def run_load(args, work, tag):
    """Starts the load processes, releases them together, returns their per-connection
    results, the summaries and the barrier's timing."""
    ncpu = os.cpu_count() or 1
    per = [args.connections // args.processes + (k < args.connections % args.processes)
           for k in range(args.processes)]
    procs = []
    for k, n in enumerate(per):
        out = os.path.join(work, f"load-{tag}-{k}.json")
        cmd = ["ip", "netns", "exec", env.NS_C, "taskset", "-c", str(k % ncpu), args.load,
               "--server", env.S4, "--local", env.C4[k % 2], "--connections", str(n),
               "--size", str(args.size), "--migrate-after", str(args.migrate_after),
               "--rate", str(args.rate / args.processes), "--timeout", str(args.timeout),
               "--migration", args.migration, "--hold", "--barrier-signal",
               "--hold-wait", str(args.hold_wait), "--json", out,
               "--migrate-rate", str(args.migrate_rate / args.processes)]
        procs.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True), out))
    held, early, t_start = [], [], time.time()
    for p, _ in procs:  # each prints {"held": n} once its connections are held
        first = p.stdout.readline()
        is_held = first.startswith("{\"held\"")
        held.append(json.loads(first)["held"] if is_held else 0)
        early.append("" if is_held else first)
    opened_s = time.time() - t_start
    t_release = time.time()
    for p, _ in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGUSR1)
    release_spread_ms = (time.time() - t_release) * 1000
    conns, summaries = [], []
    cpu0 = children_cpu_s()
    for (p, out), first in zip(procs, early):
        rest = first + p.communicate(timeout=args.timeout + 60)[0]
        summaries.append(json.loads(rest.strip().splitlines()[-1]))
        with open(out) as f:
            conns += json.load(f)["connections"]
    return conns, summaries, {"held": sum(held), "open_s": opened_s,
                              "signal_spread_ms": release_spread_ms,
                              "load_cpu_s": children_cpu_s() - cpu0,
                              "migrate_s": time.time() - t_release}


def run(args, steering, work, cert, key):
    server = env.Server(args.server, work, cert, key, "--workers", str(args.workers), "--pin",
                        *([] if steering else ["--no-steering"]),
                        idle_timeout_ms=120000, duration_s=args.timeout * 3 + 120)
    delay = DelayLine(args.delay_line, args.rtt_ms, work) if args.rtt_ms > 0 else None
    udp_c, udp_s, backlog = udp_counters(env.NS_C), udp_counters(env.NS_S), softnet_dropped()
    t_run = time.time()
    try:
        conns, summaries, barrier = run_load(args, work, "on" if steering else "off")
    finally:
        wall_s = time.time() - t_run
        cpu0 = children_cpu_s()
        delay_stats = delay.stop() if delay else None
        cpu1 = children_cpu_s()
        stats = server.stop()
        cpu2 = children_cpu_s()
    udp_c, udp_s = diff(udp_counters(env.NS_C), udp_c), diff(udp_counters(env.NS_S), udp_s)
    backlog = softnet_dropped() - backlog
    ok = [c for c in conns if c["success"]]
    handover = [c["handover_ms"] for c in conns if c.get("handover_ms", -1) >= 0]
    rtts = [c["min_rtt_ms"] for c in conns if c.get("min_rtt_ms", -1) >= 0]
    tot = lambda k: sum(c.get(k, 0) for c in conns)  # noqa: E731
    owned, mis = stats["total"]["owned"], stats["total"]["misdirected"]
    tx_dropped = sum(w["tx_dropped"] for w in stats["workers"])
    # Datagrams the hosts dropped (whole run, both directions), from the kernels' counters:
    # receive buffers full (RcvbufErrors), no socket (NoPorts), CPU backlog full, and the
    # delay line's drops. (The applications' own counts stop when a connection ends, so
    # sent - read is not a loss figure.)
    server_tx = sum(w["tx_packets"] for w in stats["workers"])
    server_rx = sum(w["rx_packets"] for w in stats["workers"])
    client_tx, client_rx = tot("tx_datagrams"), tot("rx_datagrams")
    delay_lost = sum(q["lost"] + q["overflow"] for q in delay_stats["queues"]) if delay_stats else 0
    net_lost = (udp_c["RcvbufErrors"] + udp_c["NoPorts"] + udp_s["RcvbufErrors"] +
                udp_s["NoPorts"] + backlog + delay_lost + tx_dropped)
    # Packets after migration, both directions: client datagrams sent + server 1-RTT packets
    # received or missing. Lost: client packets ngtcp2 declared lost or the server dropped as
    # misdirected (every misdirected packet follows a migration), server packets missing.
    sent_after = tot("tx_after_migration") + tot("missing_received_after_migration") + sum(
        s["received_1rtt_after_migration"] for s in summaries)
    lost_after = (tot("lost_sent_after_migration") + tot("missing_received_after_migration")
                  + mis)
    # Handover in RTTs: against the path's RTT (the delay line's), not ngtcp2's RTT samples,
    # which include the queueing of a saturated 2-core machine (reported as load_rtt_ms_p50).
    rtt = args.rtt_ms
    r = {
        "steering": steering, "connections": len(conns), "succeeded": len(ok),
        "failed": len(conns) - len(ok), "held_at_barrier": barrier["held"],
        "open_phase_s": barrier["open_s"], "signal_spread_ms": barrier["signal_spread_ms"],
        "barrier_spread_ms_max": max(s["barrier_spread_ms"] for s in summaries),
        "handover_measured": len(handover),
        "handover_ms_p50": percentile(handover, 0.5), "handover_ms_p99": percentile(handover, 0.99),
        "rtt_ms": rtt, "load_min_rtt_ms_p50": percentile(rtts, 0.5),
        "handover_rtts_p50": percentile(handover, 0.5) / rtt if rtt > 0 else None,
        "handover_rtts_p99": percentile(handover, 0.99) / rtt if rtt > 0 else None,
        "lost_sent_after_migration": tot("lost_sent_after_migration"),
        "missing_received_after_migration": tot("missing_received_after_migration"),
        "packets_after_migration": sent_after, "lost_after_migration": lost_after,
        "loss_after_migration": lost_after / max(1, sent_after),
        "rx_old_path_after_migration": tot("rx_old_path_after_migration"),
        # The same loss, counting as delivered the server packets that reached the client's old
        # socket after the switch (delivered by the network, discarded by the client's ngtcp2):
        # per connection, missing server packet numbers beyond those old-path datagrams.
        "loss_after_migration_net": (
            tot("lost_sent_after_migration") + mis + sum(
                max(0, c.get("missing_received_after_migration", 0) -
                    c.get("rx_old_path_after_migration", 0)) for c in conns)) / max(1, sent_after),
        "datagrams": {"server_tx": server_tx, "server_rx": server_rx, "client_tx": client_tx,
                      "client_rx": client_rx},
        "datagrams_lost": net_lost,
        "datagram_loss": net_lost / max(1, udp_c["OutDatagrams"] + udp_s["OutDatagrams"]),
        "pto_total": tot("pto_count"), "owned": owned, "misdirected": mis,
        "misdirected_share": mis / max(1, owned + mis), "server_tx_dropped": tx_dropped,
        "kernel_backlog_dropped": backlog,
        "udp_client": udp_c, "udp_server": udp_s,
        "delay_line": delay_stats, "bpf": stats.get("bpf"),
        "wall_s": wall_s, "cpu_s": {"load": barrier["load_cpu_s"], "delay_line": cpu1 - cpu0,
                                    "server": cpu2 - cpu1},
        "migrate_rate": args.migrate_rate,
        "errors": sorted({c.get("error", "") for c in conns if not c["success"]})[:5],
    }
    return r


def line(r):
    rtts = (f" = {r['handover_rtts_p50']:.2f} / {r['handover_rtts_p99']:.2f} RTT"
            if r["handover_rtts_p50"] is not None else "")
    return (f"steering {'on ' if r['steering'] else 'off'}: {r['succeeded']}/{r['connections']} ok"
            f" ({r['held_at_barrier']} open and migrated together, spread"
            f" {r['barrier_spread_ms_max']:.0f} ms), handover p50 {r['handover_ms_p50']:.1f} ms"
            f" p99 {r['handover_ms_p99']:.1f} ms{rtts} (path rtt {r['rtt_ms']:.0f} ms,"
            f" ngtcp2 min_rtt p50 under load {r['load_min_rtt_ms_p50']:.1f} ms),"
            f" loss after migration {100 * r['loss_after_migration']:.2f}%"
            f" ({r['lost_after_migration']}/{r['packets_after_migration']};"
            f" {100 * r['loss_after_migration_net']:.2f}% not counting old-path deliveries),"
            f" misdirected {100 * r['misdirected_share']:.1f}%,"
            f" datagrams dropped by the hosts {100 * r['datagram_loss']:.2f}%"
            f" ({r['datagrams_lost']}),"
            f" kernel backlog drops {r['kernel_backlog_dropped']},"
            f" old-path datagrams after the switch {r['rx_old_path_after_migration']},"
            f" cpu s server {r['cpu_s']['server']:.1f} load {r['cpu_s']['load']:.1f}"
            f" delay {r['cpu_s']['delay_line']:.1f} in {r['wall_s']:.0f} s wall")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--load", required=True)
    p.add_argument("--delay-line", help="qs_delay_line binary (needed with --rtt-ms)")
    p.add_argument("--rtt-ms", type=float, default=0, help="added RTT (delay line); 0: none")
    p.add_argument("--connections", type=int, default=10000)
    p.add_argument("--processes", type=int, default=0,
                   help="load processes (default: one per 5,000 connections)")
    p.add_argument("--rate", type=float, default=1000, help="connections opened per second")
    p.add_argument("--size", type=int, default=80000)
    p.add_argument("--migrate-after", type=int, default=40000)
    p.add_argument("--migration", default="port", help="port | address | rebind | none")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--hold-wait", type=float, default=15)
    p.add_argument("--migrate-rate", type=float, default=0,
                   help="migrations per second after the release, all processes together "
                        "(0: every connection as fast as the load processes can)")
    p.add_argument("--timeout", type=int, default=120)
    p.add_argument("--only", choices=("on", "off"), help="run one configuration only")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    if args.rtt_ms > 0 and not args.delay_line:
        p.error("--rtt-ms needs --delay-line")
    args.processes = args.processes or max(1, (args.connections + 4999) // 5000)
    work = env.tempdir()
    env.up()
    env.sh("tc", "-n", env.NS_S, "qdisc", "del", "dev", env.IF_S, "root", check=False)
    try:
        cert, key = env.make_cert(work)
        configs = [s for s in (True, False) if args.only is None or args.only == ("on" if s else "off")]
        results = [run(args, s, work, cert, key) for s in configs]
    finally:
        env.down()
        env.shutil.rmtree(work, ignore_errors=True)
    for r in results:
        print(line(r))
    out = {"args": vars(args), "results": results}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
