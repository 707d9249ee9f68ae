#!/usr/bin/env python3
"""The effect of the optional hold (keep a flow's first short headers on the channel until
the handshake is likely confirmed): fetch time of a small and a large file through
quicstepd on a realistic profile, hold off vs on, interleaved. Root; a benchmark.

    sudo tests/quicstepd/bench_hold.py [--profile london-ohio] [--rounds 5]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qsd_helpers as h  # noqa: E402
from qsd_helpers import lab_helpers  # noqa: E402

HOLDS = {"off": "", "3 packets": "[hold]\npackets = 3\n", "4 packets": "[hold]\npackets = 4\n", "1 RTT (80 ms)": "[hold]\ntime_ms = 80\n"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="london-ohio")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="qsd-hold-")
    os.chmod(work, 0o755)
    procs = h.Procs()
    h.wait_lab_idle()
    lab_helpers.qslab("up", "--profile", args.profile, timeout=180)
    try:
        lab = lab_helpers.status()
        ns, wg = lab["client"]["netns"], lab["client"]["channel"]["interface"]
        srv = lab["servers"][0]
        dest = srv["v4"][0] if isinstance(srv["v4"], list) else srv["v4"]
        htdocs, key, cert = h.make_site(work, 10)
        with open(os.path.join(htdocs, "100k.bin"), "wb") as f:
            f.write(os.urandom(100_000))
        procs.start(srv["netns"], ["gtlsserver", "--quiet", f"--htdocs={htdocs}", "*", "443", key,
                                   cert], os.path.join(work, "server.log"))
        sock = os.path.join(work, "control.sock")
        times = {(hold, f): [] for hold in HOLDS for f in ("100k.bin", "10M.bin")}
        for r in range(args.rounds):
            for hold, extra in HOLDS.items():
                cfg = h.write_config(os.path.join(work, "q.toml"), wg, extra=extra)
                d = procs.start(ns, [h.QSD, "--config", cfg, "--control", sock],
                                os.path.join(work, "d.log"))
                h.wait_daemon(ns, sock, d)
                for f in ("100k.bin", "10M.bin"):
                    out = os.path.join(work, "dl")
                    os.makedirs(out, exist_ok=True)
                    t0 = time.time()
                    subprocess.run(["ip", "netns", "exec", ns, "timeout", "60", "gtlsclient",
                                    "--quiet", "--exit-on-all-streams-close", f"--download={out}",
                                    dest, "443", f"https://open.test/{f}"],
                                   capture_output=True, check=True)
                    times[(hold, f)].append(time.time() - t0)
                procs.stop(d)
        for f in ("100k.bin", "10M.bin"):
            print(f"{f:9s} " + "  ".join(
                f"hold {hold}: {statistics.median(times[(hold, f)]) * 1000:.0f} ms"
                for hold in HOLDS))
    finally:
        procs.stop_all()
        lab_helpers.qslab("down", check=False, timeout=120)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
