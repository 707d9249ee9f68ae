#!/usr/bin/env python3
"""What the move to the native path costs, seen by the server: page loads (Chromium) in each
mode with gtlsserver (ngtcp2) writing a qlog per connection, each turned into the server's
timeline of the response (milliseconds after the request arrived, the qlog's clock):

  first_data      the first response byte sent
  move            the server's first PATH_CHALLENGE: it saw the client's packets from the new
                  (native) address and began to send there (RFC 9000 §9.3), under the
                  anti-amplification limit (three times the bytes received there, §8.2)
  validated       the PATH_RESPONSE arrived: the new path is validated, the limit lifted
  last_data       the last response byte sent (retransmissions included)
  kb_before_move  response KB sent before the move (on the channel's path)
  kb_validating   response KB sent while the new path was being validated
  cwnd_before/after  the congestion window just before and just after the move (ngtcp2
                  resets it and the RTT estimate on a new address, RFC 9000 §9.4)
  size_before/after  the largest datagram sent before the move and in the first RTT after
                  it (a new path starts again at 1,200 bytes until PMTUD probes it)
  rtt_sample      the server's first RTT sample after the move (its estimate was reset)
  srtt_native     the server's smoothed RTT when it sent its first response byte after the
                  move: ngtcp2 paces a flight at cwnd x 1.25 per smoothed RTT, so a flight
                  sent before any sample on the new path waits as if the RTT were 333 ms
  stall_ms        the longest pause between response packets after the move, and
  stall_at_ms     when it began (a pause the pacer makes, or one for lost packets)

  python3 -m measurement.pageload.move_cost --profile london-ohio --channel-rate 5 \\
      --pages 100KB 1MB --rounds 5 [--also hold queue] --out measurement/pageload/results
(root; takes the lab lock /run/qs-helper-lab.lock unless --no-lock). Writes
OUT/move_cost.csv and prints the medians as a markdown table."""
import argparse
import fcntl
import json
import os
import shutil
import statistics
import sys
import time

from measurement.pageload import harness

LOCK = "/run/qs-helper-lab.lock"
EXTRA_VARIANTS = {"hold": harness.HOLD_VARIANT, "queue": harness.QUEUE_PATH_VARIANT}


def lift_variant(spec):
    """quicstepd sending lift datagrams after a moved flow's first native packet
    (client/kernel/lift_datagrams.hpp): credit for the server's anti-amplification limit.
    `spec`: BYTES, or BYTES@MS with [native_switch] lift_delay_ms."""
    n, _, delay = spec.partition("@")
    extra = f"[native_switch]\nlift_bytes = {int(n)}\n"
    if delay:
        extra += f"lift_delay_ms = {int(delay)}\n"
    return (f"QUICstep lift {spec}", "QUICstep", extra)
FIELDS = ["profile", "channel_rate_mbit", "page", "mode", "round", "ttfb_ms", "plt_ms",
          "connections", "first_data_ms", "move_ms", "validated_ms", "last_data_ms",
          "kb_before_move", "kb_validating", "kb_total", "cwnd_before", "cwnd_after",
          "srtt_before", "srtt_after", "size_before", "size_after", "rtt_sample_ms",
          "srtt_native", "stall_ms", "stall_at_ms"]


def read_qlog(path):
    """The events of an ngtcp2 JSON-SEQ qlog (records separated by RS, 0x1e)."""
    with open(path, "rb") as f:
        text = f.read().decode(errors="replace")
    events = []
    for rec in text.split("\x1e"):
        rec = rec.strip()
        if not rec:
            continue
        try:
            e = json.loads(rec)
        except ValueError:
            continue  # a record cut short by the server's exit
        if "name" in e:
            events.append(e)
    return events


def _frames(e, kind):
    return [f for f in e.get("data", {}).get("frames", []) if f.get("frame_type") == kind]


def _bidi_stream_bytes(e):
    return sum(f.get("length", 0) for f in _frames(e, "stream") if f.get("stream_id", 1) % 4 == 0)


def timeline(events):
    """The response's timeline (module docstring) from one connection's server qlog; None
    when the connection carried no request."""
    t_req = next((e["time"] for e in events if e["name"] == "transport:packet_received"
                  and _bidi_stream_bytes(e)), None)
    if t_req is None:
        return None
    sent = [e for e in events if e["name"] == "transport:packet_sent"]
    data = [e for e in sent if e["time"] >= t_req and _bidi_stream_bytes(e)]
    if not data:
        return None
    move = next((e["time"] for e in sent if e["time"] >= t_req and _frames(e, "path_challenge")),
                None)
    valid = None
    if move is not None:
        valid = next((e["time"] for e in events if e["name"] == "transport:packet_received"
                      and e["time"] >= move and _frames(e, "path_response")), None)
    metrics = [e for e in events if e["name"] == "recovery:metrics_updated"]

    def metric(key, before):
        pick = ([e for e in metrics if e["time"] < move and key in e["data"]] if before else
                [e for e in metrics if e["time"] >= move and key in e["data"]])
        if not pick:
            return None
        return pick[-1 if before else 0]["data"][key]

    def kb(lo, hi):
        return round(sum(_bidi_stream_bytes(e) for e in data if lo <= e["time"] < hi) / 1000, 1)

    def size(lo, hi):
        sizes = [e["data"].get("raw", {}).get("length", 0) for e in sent if lo <= e["time"] < hi]
        return max(sizes) if sizes else None

    out = {"first_data_ms": data[0]["time"] - t_req, "last_data_ms": data[-1]["time"] - t_req,
           "kb_total": kb(t_req, float("inf"))}
    if move is not None:
        end = valid if valid is not None else float("inf")
        srtt = metric("smoothed_rtt", True) or 0
        out.update({"move_ms": move - t_req,
                    "validated_ms": None if valid is None else valid - t_req,
                    "kb_before_move": kb(t_req, move), "kb_validating": kb(move, end),
                    "cwnd_before": metric("congestion_window", True),
                    "cwnd_after": metric("congestion_window", False),
                    "srtt_before": metric("smoothed_rtt", True),
                    "srtt_after": metric("smoothed_rtt", False),
                    "size_before": size(t_req, move), "size_after": size(move, move + srtt)})
        out.update(_after_move(move, t_req, data, metrics))
    return out


def _after_move(move, t_req, data, metrics):
    """The pacing seen after the move: the server's first RTT sample, its smoothed RTT when
    the response's first packet left on the new path, and the longest pause after it."""
    out = {}
    sample = next((e["time"] for e in metrics if e["time"] >= move and "latest_rtt" in e["data"]),
                  None)
    out["rtt_sample_ms"] = None if sample is None else sample - t_req
    after = [e for e in data if e["time"] >= move]
    if after:
        srtt = [e for e in metrics if e["time"] <= after[0]["time"] and "smoothed_rtt" in e["data"]]
        out["srtt_native"] = srtt[-1]["data"]["smoothed_rtt"] if srtt else None
    if len(after) > 1:
        gap, at = max((b["time"] - a["time"], a["time"]) for a, b in zip(after, after[1:]))
        out.update({"stall_ms": gap, "stall_at_ms": at - t_req})
    return out


def load_with_qlog(batch, qlog_dir, round_no, label, base, page, keep=None):
    before = set(os.listdir(qlog_dir))
    row = batch.load(round_no, label, page, base)
    time.sleep(1.5)  # the close, then gtlsserver frees the connection and closes its qlog
    new = [os.path.join(qlog_dir, n) for n in sorted(set(os.listdir(qlog_dir)) - before)]
    if keep:  # the qlogs kept for a closer look: KEEP/<mode>-<page>-r<round>-<name>
        os.makedirs(keep, exist_ok=True)
        for p in new:
            shutil.copy(p, os.path.join(keep, f"{label.replace(' ', '_')}-{page}-r{round_no}-"
                                              f"{os.path.basename(p)}"))
    lines = [t for t in (timeline(read_qlog(p)) for p in new) if t]
    out = {"profile": batch.profile, "channel_rate_mbit": batch.rate, "page": page,
           "mode": label, "round": round_no, "ttfb_ms": row.get("ttfb_ms"),
           "plt_ms": row.get("plt_ms"), "connections": len(lines)}
    if row["ok"] and lines:
        out.update(max(lines, key=lambda t: t["kb_total"]))
    return out


def medians(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["page"], r["mode"]), []).append(r)
    cols = ["ttfb_ms", "plt_ms", "first_data_ms", "move_ms", "validated_ms", "last_data_ms",
            "kb_before_move", "kb_validating", "cwnd_before", "cwnd_after", "srtt_before",
            "srtt_after", "size_before", "size_after", "rtt_sample_ms", "srtt_native", "stall_ms",
            "stall_at_ms"]
    md = ["| page | mode | loads | " + " | ".join(cols) + " |",
          "|---|---|---|" + "---|" * len(cols)]
    for (page, mode), rs in sorted(groups.items()):
        cells = []
        for c in cols:
            v = [float(r[c]) for r in rs if r.get(c) not in (None, "")]
            cells.append("–" if not v else f"{statistics.median(v):,.1f}")
        md.append(f"| {page} | {mode} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--profile", default="london-ohio")
    ap.add_argument("--channel-rate", type=float, default=5)
    ap.add_argument("--pages", nargs="+", default=["100KB", "1MB"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--also", nargs="*", default=[], choices=sorted(EXTRA_VARIANTS),
                    help="more QUICstep variants beside native, full VPN and the default")
    ap.add_argument("--no-lock", action="store_true")
    ap.add_argument("--lift", nargs="*", default=[], metavar="BYTES[@MS]",
                    help="more QUICstep variants sending that many bytes of lift datagrams "
                         "(@MS: [native_switch] lift_delay_ms)")
    ap.add_argument("--keep-qlogs", metavar="DIR", help="copy each load's server qlogs there")
    ap.add_argument("--think-ms", type=int, default=None,
                    help="serve with quicstep-server and this think time before each response")
    ap.add_argument("--unpaced-first-flight", action="store_true",
                    help="with --think-ms: quicstep-server does not pace a flight sent before "
                         "the new path's first RTT sample")
    args = ap.parse_args()
    if args.unpaced_first_flight and args.think_ms is None:
        ap.error("--unpaced-first-flight needs --think-ms (it is quicstep-server's option)")
    if os.geteuid() != 0:
        sys.exit("move_cost: run as root (network namespaces)")
    rate = int(args.channel_rate) if args.channel_rate == int(args.channel_rate) else args.channel_rate
    lock = None
    if not args.no_lock:
        lock = open(LOCK, "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
    rows = []
    qlog_dir = None
    batch = harness.Batch("move_cost", args.profile, rate, args.pages, args.rounds,
                          variants=harness.DEFAULT_VARIANTS + [EXTRA_VARIANTS[v] for v in args.also]
                          + [lift_variant(n) for n in args.lift], think_ms=args.think_ms,
                          server_args=["--unpaced-first-flight"] if args.unpaced_first_flight
                          else [])
    try:
        qlog_dir = os.path.join(batch.work, "qlog")
        os.makedirs(qlog_dir)
        batch.qlog_dir = qlog_dir
        batch.up()
        for r in range(args.rounds):
            n = len(batch.variants)
            for label, base, _ in batch.variants[r % n:] + batch.variants[:r % n]:
                with batch.modes[label].using(base):
                    for page in args.pages:
                        rows.append(load_with_qlog(batch, qlog_dir, r, label, base, page,
                                                  args.keep_qlogs))
    finally:
        batch.down()
        if lock:
            fcntl.flock(lock, fcntl.LOCK_UN)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "move_cost.csv")
    harness.append_csv(path, rows, fields=FIELDS)
    print(medians(rows))
    print(f"rows: {path}")


if __name__ == "__main__":
    sys.exit(main())
