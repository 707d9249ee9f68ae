"""quicstep-probe throughput against quicstep-server in the probe namespaces (root).

usage: python3 -m tests.probe.bench_probe QUICSTEP_PROBE QUICSTEP_SERVER [--domains N] [--runs "threads:concurrency ..."]
Every domain resolves (static hosts) to one of the servers; the population mixes them as
given by --mix (default: all `full`, so every address costs 1 + 2 + 2 + 2 connections with
three tries stopping at a 2-of-2 majority... see the report). Prints one line per run:
domains/s, connections/s, wall time, and the class counts, so accuracy is checked too.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

from tests.probe import prb_env as env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("server")
    ap.add_argument("--domains", type=int, default=1000)
    ap.add_argument("--runs", default="1:1 1:10 1:100 1:1000 2:1000")
    ap.add_argument("--mix", default="full.test",
                    help="comma-separated server names the domains cycle through")
    ap.add_argument("--server-workers", default="1")
    ap.add_argument("--extra", default="", help="extra prober arguments")
    args = ap.parse_args()
    workdir = env.tempdir()
    env.up()
    cert, key = env.make_cert(workdir)
    procs = env.Processes(workdir)
    try:
        env.start_servers(procs, args.server, cert, key)
        mix = args.mix.split(",")
        hosts = os.path.join(workdir, "bench_hosts.txt")
        with open(hosts, "w") as f:
            for i in range(args.domains):
                v4 = env.SERVERS[mix[i % len(mix)]][0]
                f.write(f"d{i}.bench.test {v4}\n")
        targets = "".join(f"{i + 1},d{i}.bench.test\n" for i in range(args.domains))
        for run in args.runs.split():
            threads, conc = run.split(":")
            cmd = ["ip", "netns", "exec", env.NS_C, "/usr/bin/time", "-f",
                   "probe-cpu user=%U sys=%S maxrss_kb=%M", args.probe, "--static-hosts", hosts,
                   "--no-www", "--family", "4", "--second-local-address", env.C4[1],
                   "--threads", threads, "--concurrency", conc, *args.extra.split()]
            t0 = time.monotonic()
            p = subprocess.run(cmd, input=targets, capture_output=True, text=True, timeout=1800)
            wall = time.monotonic() - t0
            records = [json.loads(l) for l in p.stdout.splitlines()]
            classes = collections.Counter()
            connections = 0
            for r in records:
                for n in r["names"]:
                    for a in n["addresses"]:
                        t = a["tests"]
                        classes[(a["quic"], t["nat_rebinding"]["label"],
                                 t["port_migration"]["label"],
                                 t["address_migration"]["label"])] += 1
                        connections += 1 if not a["quic"] else sum(
                            len(t[k]["tries"]) for k in t)
            print(f"threads={threads} concurrency={conc} domains={len(records)} "
                  f"wall={wall:.2f}s domains/s={len(records) / wall:.1f} "
                  f"connections/s={connections / wall:.1f} rc={p.returncode} "
                  f"classes={dict(classes)}", flush=True)
            if p.stderr.strip():
                print("  stderr:", p.stderr.strip()[-500:])
            procs.check_alive()
    finally:
        procs.stop()
        env.down()


if __name__ == "__main__":
    main()
