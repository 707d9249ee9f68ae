#!/usr/bin/env python3
"""Where QUICstep's extra time goes: page loads in each mode with captures on the client's
native interface and on its WireGuard interface, turned into a timeline per load (all on
one clock: the captures' timestamps and Navigation Timing's timeOrigin):

  hs_channel_ms     first client Initial -> last long-header packet of the client (the
                    handshake, through the channel in QUICstep and VPN modes)
  first_native_out  first client short header on the native path (the move), after the
                    Initial
  first_native_in   first server packet on the native path after the move (the server
                    answering on the new path: its path validation starts there)
  response_start    Navigation Timing responseStart
  server_short_via_channel  server short-header packets that still arrived through the
                    channel after the move (bytes), i.e. sent on the old path
  data_ms           first -> last server packet carrying the page on the path that carried
                    most of it (throughput after the move vs native: congestion state)

  python3 -m measurement.pageload.diagnose --profile london-ohio --channel-rate 5 --page 1MB \
      --rounds 3 --out measurement/pageload/results
(root; takes the lab lock /run/qs-helper-lab.lock unless --no-lock)."""
import argparse
import fcntl
import os
import shutil
import statistics
import sys
import time

from measurement.pageload import harness
from qs_support import captures

HERE = os.path.dirname(os.path.abspath(__file__))

FIELDS = ["profile", "channel_rate_mbit", "page", "mode", "round", "ttfb_ms", "plt_ms",
          "hs_channel_ms", "first_native_out_ms", "first_native_in_ms", "response_start_ms",
          "server_short_via_channel_bytes", "data_ms", "data_bytes"]


def timeline(native_pkts, channel_pkts, timing, server_addrs):
    """Milliseconds after the first client Initial (None when the event did not happen)."""
    def quic(p, form):
        return any(q.get("form") == form for q in p.get("quic", []))
    ch_out = [p for p in channel_pkts if p.get("dport") == 443 and p.get("proto") == "udp"]
    na_out = [p for p in native_pkts if p.get("dport") == 443 and p.get("proto") == "udp"]
    na_in = [p for p in native_pkts if p.get("sport") == 443 and p.get("proto") == "udp"
             and p.get("src") in server_addrs]
    ch_in = [p for p in channel_pkts if p.get("sport") == 443 and p.get("proto") == "udp"]
    initials = [p["time"] for p in ch_out + na_out if quic(p, "long")]
    if not initials:
        return {}
    t0 = min(initials)
    ms = lambda t: None if t is None else round((t - t0) * 1000, 1)  # noqa: E731
    long_out = [p["time"] for p in ch_out + na_out if quic(p, "long")]
    short_out_native = [p["time"] for p in na_out if quic(p, "short")]
    t_move = min(short_out_native) if short_out_native and ch_out else None
    first_in = min((p["time"] for p in na_in if t_move is None or p["time"] >= t_move), default=None)
    via_channel = sum(p["ip_len"] for p in ch_in if quic(p, "short") and t_move and p["time"] > t_move)
    # The path that carried most of the page: its server packets' first..last time.
    big = max((na_in, ch_in), key=lambda ps: sum(p["ip_len"] for p in ps))
    data = [p for p in big if quic(p, "short")]
    resp = timing["timeOrigin"] / 1000 + timing["responseStart"] / 1000 if timing else None
    return {"hs_channel_ms": ms(max(long_out)),
            "first_native_out_ms": ms(t_move), "first_native_in_ms": ms(first_in),
            "response_start_ms": ms(resp),
            "server_short_via_channel_bytes": via_channel,
            "data_ms": round((data[-1]["time"] - data[0]["time"]) * 1000, 1) if data else None,
            "data_bytes": sum(p["ip_len"] for p in data)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="london-ohio")
    ap.add_argument("--channel-rate", type=float, default=5)
    ap.add_argument("--page", nargs="+", default=["1MB"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--no-lock", action="store_true")
    ap.add_argument("--think-ms", type=int, default=None,
                    help="serve the pages with quicstep-server and this think time")
    ap.add_argument("--keep-captures", metavar="DIR",
                    help="keep each load's two captures in DIR (diag-ROUND-MODE-PAGE-IFACE.pcap)")
    ap.add_argument("--with-hold", action="store_true",
                    help="also quicstepd holding short headers 100 ms on the channel")
    args = ap.parse_args()
    lock = None
    if not args.no_lock:
        lock = open("/run/qs-helper-lab.lock", "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
    variants = harness.DEFAULT_VARIANTS + ([harness.HOLD_VARIANT] if args.with_hold else [])
    batch = harness.Batch("diagnose", args.profile, args.channel_rate, args.page, args.rounds,
                          variants=variants, think_ms=args.think_ms)
    rows = []
    try:
        batch.up()
        lab = batch.lab
        ns = lab["client"]["netns"]
        native_if, wg_if = lab["client"]["native"]["interface"], lab["client"]["channel"]["interface"]
        servers = {s["v4"] for s in lab["servers"]} | {s["v6"] for s in lab["servers"]}
        for r in range(args.rounds):
            for mode, base, _ in variants:
                with batch.modes[mode].using(base):
                    for page in args.page:
                        caps = []
                        for iface in (native_if, wg_if):
                            path = os.path.join(batch.work, f"diag-{r}-{mode[0]}-{page}-{iface}.pcap")
                            caps.append((path, captures.start(batch.procs, ns, iface, path)))
                        row = batch.load(r, mode, page, base)
                        time.sleep(0.5)
                        for _, p in caps:
                            batch.procs.stop(p)
                        native_pkts, channel_pkts = (captures.inspect(path) for path, _ in caps)
                        for path, _ in caps:
                            if args.keep_captures:
                                os.makedirs(args.keep_captures, exist_ok=True)
                                shutil.move(path, args.keep_captures)
                            else:
                                os.remove(path)
                        t = timeline(native_pkts, channel_pkts, batch.last_timing, servers)
                        out = {"profile": args.profile, "channel_rate_mbit": args.channel_rate,
                               "page": page, "mode": mode, "round": r,
                               "ttfb_ms": row.get("ttfb_ms"), "plt_ms": row.get("plt_ms"), **t}
                        rows.append(out)
                        harness.log(" ".join(f"{k}={out.get(k)}" for k in FIELDS[3:]))
    finally:
        batch.down()
        if lock:
            fcntl.flock(lock, fcntl.LOCK_UN)
    os.makedirs(args.out, exist_ok=True)
    harness.append_csv(os.path.join(args.out, "diagnosis.csv"), rows, FIELDS)
    print(f"\nmedians ({args.profile}, {args.channel_rate} Mbit/s), ms after the first Initial:")
    for page in args.page:
        for mode, _, _ in variants:
            rs = [x for x in rows if x["mode"] == mode and x["page"] == page]
            def m(k):
                v = [x[k] for x in rs if x.get(k) not in (None, "")]
                return statistics.median(v) if v else None
            print(f"  {page:5} {mode:8} " + " ".join(f"{k}={m(k)}" for k in FIELDS[5:]))


if __name__ == "__main__":
    main()
