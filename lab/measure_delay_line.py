#!/usr/bin/env python3
"""Measures the delay line's accuracy and throughput on the lab (root; takes ~1 min).

Accuracy: the one-way delay of a paced UDP stream client -> server (qs_owd_probe) with the
`default` profile (the delay line adds 3 + 1 = 4 ms on that path, two queue passes) minus
the same without emulation (profile `none`), at 1,000 and 10,000 packets/s.
Throughput: iperf3 TCP client -> server natively with and without the delay line, and
the highest UDP packet rate it passes without loss. Prints a markdown table
(lab/README.md quotes it).

  lab/measure_delay_line.py [--probe PATH] [--seconds N]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
QSLAB = os.path.join(HERE, "qslab")


def sh(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, check=True, **kw).stdout


def status():
    return json.loads(sh(QSLAB, "status", "--json"))


def owd(probe, lab, rate, count):
    srv = lab["servers"][0]
    out = sh(probe, "--from", lab["client"]["netns"], "--to", srv["netns"], "--dst", srv["v4"],
             "--rate", str(rate), "--count", str(count))
    return json.loads(out)


def iperf_tcp(lab, seconds):
    srv = lab["servers"][0]
    server = subprocess.Popen(["ip", "netns", "exec", srv["netns"], "iperf3", "-s", "-1", "-B", srv["v4"]],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        out = sh("ip", "netns", "exec", lab["client"]["netns"], "iperf3", "-J", "-c", srv["v4"],
                 "-t", str(seconds))
    finally:
        server.wait(timeout=30)
    return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", default=os.environ.get("QSLAB_OWD_PROBE") or
                    os.path.join(os.path.dirname(HERE), "build/release/lab/qs_owd_probe"))
    ap.add_argument("--seconds", type=int, default=5)
    a = ap.parse_args()
    rows = {}
    for profile in ("none", "default"):
        sh(QSLAB, "up", "--profile", profile)
        lab = status()
        for rate in (1000, 10000):
            rows[(profile, rate)] = owd(a.probe, lab, rate, rate * a.seconds)
        rows[(profile, "tcp")] = iperf_tcp(lab, a.seconds)
        for rate in (20000, 50000):
            rows[(profile, f"udp{rate}")] = owd(a.probe, lab, rate, rate * 2)
        if profile == "default":
            with open(os.path.join(lab["state_dir"], "delay_line.stats.json")) as f:
                rows["stats"] = f.read()
        sh(QSLAB, "down")
    configured = 4.0  # ms: isp 3 ms + srv1 1 ms (profile default), client -> server
    print("| rate | configured | added p50 (error) | added mean | added p99 | lost |")
    print("|---|---|---|---|---|---|")
    for rate in (1000, 10000):
        base, d = rows[("none", rate)]["owd_us"], rows[("default", rate)]
        added50 = (d["owd_us"]["p50"] - base["p50"]) / 1000
        mean = (d["owd_us"]["mean"] - base["mean"]) / 1000
        p99 = (d["owd_us"]["p99"] - base["p99"]) / 1000
        print(f"| {rate} pkt/s | {configured:.3f} ms | {added50:.3f} ms ({(added50 - configured) * 1000:+.0f} µs) "
              f"| {mean:.3f} ms | {p99:.3f} ms | {d['lost']}/{d['sent']} |")
    print()
    print(f"TCP client->server (iperf3, {a.seconds} s): {rows[('none', 'tcp')]:.0f} Mbit/s without, "
          f"{rows[('default', 'tcp')]:.0f} Mbit/s with the delay line")
    for rate in (20000, 50000):
        d = rows[("default", f"udp{rate}")]
        print(f"UDP {rate} pkt/s sent (achieved {d['rate_pps']:.0f}): lost {d['lost']}/{d['sent']}, "
              f"p50 {d['owd_us']['p50'] / 1000:.3f} ms, p99 {d['owd_us']['p99'] / 1000:.3f} ms")
    print("delay line counters:", rows["stats"].strip())
    print("raw:", json.dumps({f"{k[0]}/{k[1]}" if isinstance(k, tuple) else k: v for k, v in rows.items()
                              if k != "stats"}))


if __name__ == "__main__":
    sys.exit(main())
