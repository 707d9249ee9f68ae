#!/usr/bin/env python3
"""The page-load experiments of the paper's §4.4 on the shared lab, with a real browser:

  table5   pages of 10 KB, 100 KB, 1 MB, 10 MB x channel rate 1, 5, 10 Mbit/s, unlimited
           (paper Table 5 / Figure 8), on the paper's default distances (london-ohio)
  table2   provider distance: London, New Jersey, Osaka clients, near and far providers,
           5 Mbit/s (paper Tables 2 and 4, Figures 5 and 6)
  table3   the DNS-optimised variant: the server near the client (profiles *-near) against
           the default (server near the provider), 5 Mbit/s (paper Table 3, Figure 9)
  hold     london-ohio at 5 Mbit/s with a fourth mode, quicstepd holding short headers on the
           channel for 100 ms (the move after the server completed the handshake)
  switchhold london-ohio at 5 Mbit/s, 10 KB, 100 KB, 1 MB: native, full VPN, QUICstep and
           QUICstep with the routed path's hold at the switch ([native_switch] hold = true)
  holdlift london-ohio at 5 Mbit/s, 10 KB, 100 KB, 1 MB: native, full VPN, QUICstep, the
           hold at the switch, and the hold with lift datagrams (lift_bytes = 9600); two
           batches: served by gtlsserver (ngtcp2 0.12.1), and by quicstep-server
           --unpaced-first-flight (paced as ngtcp2 >= 0.14: holdlift-unpaced)
  paths    london-ohio at 5 Mbit/s: native, quicstepd with its default (routed) native path
           and with the queue path (no full VPN: the other batches have it)
  tun      london-ohio at 5 Mbit/s: native, quicstepd (default) and the TUN engine
           quicstep-tun, 100 KB and 1 MB pages (issue 23's target: within 1.1x of quicstepd)
  bound    london-ohio at 5 Mbit/s and unlimited, 10 KB, 100 KB, 1 MB: native, full VPN,
           QUICstep, QUICstep with permissive addressing (no address change, so no migration:
           what the move costs without the server's path validation and congestion reset)
           and QUICstep holding each flow on the channel for 64 short headers (small flows
           never move)
  think    london-ohio at 5 Mbit/s, 100 KB and 1 MB, served by quicstep-server with a think
           time before each response (--think-ms, default 0 150 300; experiments think0,
           think150, ...): native, full VPN, QUICstep, when the server computes its pages
  proxy    london-ohio at 5 Mbit/s to the proxy: native, the full proxy (all traffic through
           Shadowsocks) and quicstepd with Shadowsocks as its tproxy channel; 100 KB, 1 MB,
           10 MB (the user's alternative where WireGuard is blocked)
  corpus   the 100 web-like pages of corpus.py (seed 0) on london-ohio and london-frankfurt at
           5 Mbit/s: native, full VPN, QUICstep (the paper's Figure 4 and its load reduction);
           --corpus-pages N loads an even sample of N of them

Each batch (one profile and rate) takes the lab lock /run/qs-helper-lab.lock, brings the lab
up, runs its rounds and brings it down, so other users of the lab get it between batches.
Rows go to OUT/rounds.csv (appended, so an interrupted run can be continued with
--skip-done); at the end the report (OUT/REPORT.md) and plots (OUT/*.png) are written from
the CSV. `--report-only` rewrites them from an existing CSV.

  python3 -m measurement.pageload.run_experiments --out measurement/pageload/results
"""
import argparse
import csv
import fcntl
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

LOCK = "/run/qs-helper-lab.lock"
RATES = (1, 5, 10, 0)
TABLE2_PROFILES = ("london-ohio", "london-tokyo", "london-frankfurt", "newjersey-ohio",
                   "newjersey-seoul", "osaka-tokyo", "osaka-ohio")
TABLE3_PROFILES = ("london-ohio-near", "london-tokyo-near")


THINK_MS = (0, 150, 300)


def plan(args):
    """(experiment, profile, channel rate or None, pages, rounds, variants, think ms or None,
    quicstep-server's extra options) per batch."""
    sizes = ["10KB", "100KB", "1MB", "10MB"]
    out = []
    if "table5" in args.experiments:
        for rate in RATES:
            # 1 Mbit/s: a 10 MB page through the VPN takes ~90 s a load; fewer rounds.
            rounds = max(2, args.rounds // 2) if rate == 1 else args.rounds
            out.append(("table5", args.table5_profile, rate, sizes, rounds, None))
    if "table2" in args.experiments:
        for p in TABLE2_PROFILES:
            out.append(("table2", p, None, ["1MB", "many"], args.rounds, None))
    if "table3" in args.experiments:
        for p in TABLE3_PROFILES:
            out.append(("table3", p, None, ["1MB", "many"], args.rounds, None))
    if "hold" in args.experiments:
        from measurement.pageload import harness
        out.append(("hold", args.table5_profile, 5, sizes + ["many"], args.rounds,
                    harness.DEFAULT_VARIANTS + [harness.HOLD_VARIANT]))
    if "paths" in args.experiments:
        from measurement.pageload import harness
        out.append(("paths", args.table5_profile, 5, sizes + ["many"], args.rounds,
                    [v for v in harness.DEFAULT_VARIANTS if v[0] != "full VPN"]
                    + [harness.QUEUE_PATH_VARIANT]))
    if "switchhold" in args.experiments:
        from measurement.pageload import harness
        out.append(("switchhold", args.table5_profile, 5, sizes[:3], args.rounds,
                    harness.DEFAULT_VARIANTS + [harness.SWITCH_HOLD_VARIANT]))
    if "holdlift" in args.experiments:
        from measurement.pageload import harness
        variants = harness.DEFAULT_VARIANTS + [harness.SWITCH_HOLD_VARIANT,
                                               harness.HOLD_LIFT_VARIANT]
        out.append(("holdlift", args.table5_profile, 5, sizes[:3], args.rounds, variants))
        out.append(("holdlift-unpaced", args.table5_profile, 5, sizes[:3], args.rounds, variants,
                    0, ["--unpaced-first-flight"]))
    if "tun" in args.experiments:
        from measurement.pageload import harness
        out.append(("tun", args.table5_profile, 5, ["100KB", "1MB"], args.rounds,
                    [v for v in harness.DEFAULT_VARIANTS if v[0] != "full VPN"]
                    + [harness.TUN_VARIANT]))
    if "bound" in args.experiments:
        from measurement.pageload import harness
        for rate in (5, 0):
            out.append(("bound", args.table5_profile, rate, sizes[:3], args.rounds,
                        harness.DEFAULT_VARIANTS + [harness.PERMISSIVE_VARIANT,
                                                    harness.STAY_VARIANT]))
    if "think" in args.experiments:
        for think in args.think_ms:
            out.append((f"think{think}", args.table5_profile, 5, ["100KB", "1MB"], args.rounds,
                        None, think))
    if "proxy" in args.experiments:
        from measurement.pageload import harness
        out.append(("proxy", args.table5_profile, 5, ["100KB", "1MB", "10MB"], args.rounds,
                    harness.PROXY_VARIANTS))
    if "corpus" in args.experiments:
        from measurement.pageload import corpus
        ids = [f"p{i:03d}" for i in range(corpus.DEFAULT_PAGES)]
        n = min(args.corpus_pages, len(ids))
        ids = [ids[round(i * (len(ids) - 1) / max(1, n - 1))] for i in range(n)]
        for p in args.corpus_profiles:
            out.append(("corpus", p, 5, ids, args.rounds, None))
    padded = []
    for b in out:  # think ms (None: gtlsserver serves) and quicstep-server's extra options
        if len(b) == 6:
            b += (None,)
        if len(b) == 7:
            b += ((),)
        padded.append(b)
    return padded


def done_batches(csv_path):
    if not os.path.exists(csv_path):
        return set()
    with open(csv_path) as f:
        return {(r["experiment"], r["profile"], r["channel_rate_mbit"]) for r in csv.DictReader(f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--experiments", nargs="+",
                    default=["table5", "table2", "table3", "hold", "paths"],
                    choices=["table5", "table2", "table3", "hold", "paths", "switchhold",
                             "holdlift", "tun", "bound", "think", "proxy", "corpus"])
    ap.add_argument("--rounds", type=int, default=5, help="rounds per batch (each: 3 modes)")
    ap.add_argument("--think-ms", type=int, nargs="+", default=list(THINK_MS),
                    help="think: the servers' think times, one batch each")
    ap.add_argument("--table5-profile", default="london-ohio")
    ap.add_argument("--corpus-pages", type=int, default=100,
                    help="corpus: how many of its 100 pages (an even sample)")
    ap.add_argument("--corpus-profiles", nargs="+", default=["london-ohio", "london-frankfurt"])
    ap.add_argument("--skip-done", action="store_true", help="skip batches already in the CSV")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--no-lock", action="store_true", help="the caller already holds the lock")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "rounds.csv")
    if not args.report_only:
        if os.geteuid() != 0:
            sys.exit("run_experiments: run as root (network namespaces)")
        from measurement.pageload import batch_record, harness
        done = done_batches(csv_path) if args.skip_done else set()
        for exp, profile, rate, page_names, rounds, variants, think, server_args in plan(args):
            key = (exp, profile, "" if rate is None else str(rate))
            if key in done:
                harness.log(f"skip {key}: already in {csv_path}")
                continue
            lock = None
            if not args.no_lock:
                lock = open(LOCK, "a")
                harness.log(f"waiting for the lab lock {LOCK}")
                fcntl.flock(lock, fcntl.LOCK_EX)
            t0 = time.time()
            commit, tree = batch_record.source_state()
            corpus = harness.prepare_corpus() if exp == "corpus" else None
            batch = harness.Batch(exp, profile, rate, page_names, rounds, variants=variants,
                                  corpus=corpus, think_ms=think, server_args=server_args)
            try:
                batch.up()
                rows = batch.run()
            finally:
                batch.down()
                if lock:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                    lock.close()
            harness.append_csv(csv_path, rows)
            batch_record.append(os.path.join(args.out, "batches.csv"), {
                "experiment": exp, "profile": profile, "channel_rate_mbit": key[2],
                "started_unix": round(t0), "finished_unix": round(time.time()),
                "rounds": rounds, "commit": commit, "tree": tree,
                "modes": batch_record.describe_modes(batch.variants, batch.native_paths)})
            harness.log(f"batch {key} done in {time.time() - t0:.0f} s")
    try:
        from measurement.pageload import report
    except ImportError as e:  # an interpreter without Debian's python3-matplotlib
        if sys.executable == "/usr/bin/python3":
            raise
        print(f"run_experiments: {e}; writing the report with /usr/bin/python3", flush=True)
        return subprocess.run(["/usr/bin/python3", "-m", "measurement.pageload.run_experiments",
                               "--out", os.path.abspath(args.out),
                               "--report-only"], cwd=REPO).returncode
    report.write(csv_path, args.out)
    print(f"report: {os.path.join(args.out, 'REPORT.md')}")


if __name__ == "__main__":
    sys.exit(main())
