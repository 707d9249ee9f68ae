#!/usr/bin/env python3
"""Side-by-side migration benchmark: quicstep-load against quicstep-server with and without
SK_REUSEPORT steering, in the throwaway namespaces of tests/server_testbed (root).

  server_testbed/bench/migration_bench.py --server BUILD/server_testbed/quicstep-server \
      --load BUILD/server_testbed/quicstep-load --connections 10000 --rate 200

Prints one line per configuration (handover p50/p99, failures, misdirected share) and the
whole result as JSON. Each connection GETs --size bytes and moves to a new local port after
--migrate-after bytes; arrivals are open-loop at --rate per second.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "server_testbed"))
import srvt_env as env  # noqa: E402


def run(args, steering, work, cert, key):
    server = env.Server(args.server, work, cert, key, "--workers", str(args.workers),
                        *([] if steering else ["--no-steering"]))
    try:
        out = env.netns(env.NS_C, args.load, "--server", env.S4, "--local", env.C4[0],
                        "--connections", str(args.connections), "--size", str(args.size),
                        "--migrate-after", str(args.migrate_after), "--rate", str(args.rate),
                        "--timeout", str(args.timeout), check=False,
                        timeout=args.timeout + 60).stdout
    finally:
        stats = server.stop()
    summary = json.loads(out.strip().splitlines()[-1])
    owned, mis = stats["total"]["owned"], stats["total"]["misdirected"]
    return {"steering": steering, "load": summary, "owned": owned, "misdirected": mis,
            "misdirected_share": mis / max(1, owned + mis), "bpf": stats.get("bpf")}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--load", required=True)
    p.add_argument("--connections", type=int, default=10000)
    p.add_argument("--rate", type=float, default=200)
    p.add_argument("--size", type=int, default=100000)
    p.add_argument("--migrate-after", type=int, default=30000)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--timeout", type=int, default=120)
    args = p.parse_args()
    work = env.tempdir()
    env.up()
    env.sh("tc", "-n", env.NS_S, "qdisc", "del", "dev", env.IF_S, "root", check=False)
    try:
        cert, key = env.make_cert(work)
        results = [run(args, True, work, cert, key), run(args, False, work, cert, key)]
    finally:
        env.down()
        env.shutil.rmtree(work, ignore_errors=True)
    for r in results:
        s = r["load"]
        print(f"steering {'on ' if r['steering'] else 'off'}: {s['succeeded']}/{s['connections']} ok,"
              f" handover p50 {s['handover_ms_p50']:.2f} ms p99 {s['handover_ms_p99']:.2f} ms"
              f" ({s['handover_measured']} measured), PTOs {s['pto_total']},"
              f" misdirected {100 * r['misdirected_share']:.1f}% of short-header packets")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
