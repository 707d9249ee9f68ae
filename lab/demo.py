#!/usr/bin/env python3
"""The main job on the lab: fetch open.test and blocked.test over HTTP/3 (Debian's gtlsclient
fetching a file; chromium-headless-shell loading a page that loads it) natively, through a
full VPN, and through quicstepd, with the censor on the client's ISP router, and print a
table: client x path x site -> result, time, bytes on the channel and on the native link,
and the names the censor saw (read from a capture on its client-facing interface by
quicstep-inspect).

Run as root after building, from the repository's root: `python3 -m lab.demo` (scripts/demo.sh
does both). Everything it starts it stops, by
PID; the lab is brought down at the end, also on errors and Ctrl-C."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from qs_support import binaries, captures, certs, chromium, path_modes, quicstepd
from qs_support import lab as lab_helpers
from qs_support.procs import Procs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SITES = ("open.test", "blocked.test")
PAGE_TEXT = "QUICstep demo page"
CLIENTS = ("gtlsclient", "chromium")
CENSOR_START = os.path.join(REPO, "lab", "censor", "censorctl")


def log(msg):
    print(f"demo: {msg}", flush=True)


def wg_bytes(lab):
    """Bytes the client's WireGuard interface has carried (rx + tx, tunnel payload)."""
    out = lab_helpers.in_host(lab, "client", "wg", "show", lab["client"]["channel"]["interface"],
                              "transfer").stdout.split()
    return int(out[1]) + int(out[2]) if len(out) >= 3 else 0


class Demo:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="quicstep-demo-")
        os.chmod(self.work, 0o755)
        self.procs = Procs()
        self.rows = []

    def up(self):
        up = ["up", "--profile", self.args.profile]
        if self.args.channel_rate:
            up += ["--channel-rate", str(self.args.channel_rate)]
        log(f"lab up ({' '.join(up[1:])})")
        lab_helpers.qslab(*up, timeout=240)
        self.lab = lab_helpers.status()
        c = self.lab["client"]
        self.client_ns = c["netns"]
        self.client_addrs = set(c["native"]["v4"] + c["native"]["v6"])
        self.censor_ns = self.lab["censor"]["netns"]
        self.censor_if = self.lab["censor"]["client_interface"]
        prov = self.lab["provider"]
        self.wg_endpoint = {prov["v4"], prov["v6"]}
        htdocs = os.path.join(self.work, "htdocs")
        os.makedirs(htdocs)
        with open(os.path.join(htdocs, "file.bin"), "wb") as f:
            f.write(os.urandom(self.args.size_mb * 1000 * 1000))
        with open(os.path.join(htdocs, "index.html"), "w") as f:
            # A synchronous XHR: the DOM that --dump-dom prints then says how many bytes of the
            # file arrived (x-user-defined keeps one character per byte).
            f.write(f"<html><body><p>{PAGE_TEXT}</p><script>var x = new XMLHttpRequest();"
                    "x.open('GET', '/file.bin', false);"
                    "x.overrideMimeType('text/plain; charset=x-user-defined'); x.send();"
                    "document.write('<p>file bytes: ' + x.responseText.length + '</p>');"
                    "</script></body></html>\n")
        key, cert, self.spki = certs.make_certificate(self.work)
        for srv in {s["netns"] for s in self.lab["servers"]}:
            p = self.procs.start(srv, ["gtlsserver", "--quiet", f"--htdocs={htdocs}", "*", "443",
                                       key, cert], os.path.join(self.work, f"gtlsserver-{srv}.log"))
            time.sleep(0.3)
            if p.poll() is not None:
                raise RuntimeError(f"gtlsserver did not start in {srv}")
        self.censor = None
        if os.path.exists(CENSOR_START) and not self.args.no_censor:
            log("censor on (lab/censor/censorctl): blocks SNIs and DNS names under blocked.test")
            subprocess.run([CENSOR_START, "start"], check=True, capture_output=True, timeout=60)
            self.censor = True
        else:
            log("censor off (lab/censor not built yet): the table shows what it would see")

    def fetch(self, client, site):
        if client == "chromium":
            return self.chromium_fetch(site)
        out_dir = os.path.join(self.work, f"dl-{len(self.rows)}")
        os.makedirs(out_dir)
        cmd = ["timeout", "-k", "5", str(self.args.timeout), "gtlsclient", "--quiet",
               "--exit-on-all-streams-close", f"--download={out_dir}", "--timeout=10s",
               site, "443", f"https://{site}/file.bin"]
        t0 = time.time()
        lab_helpers.in_host(self.lab, "client", *cmd, check=False, timeout=self.args.timeout + 30)
        took = time.time() - t0
        path = os.path.join(out_dir, "file.bin")
        ok = os.path.exists(path) and os.path.getsize(path) == self.args.size_mb * 1000 * 1000
        shutil.rmtree(out_dir, ignore_errors=True)
        return ok, took

    def chromium_fetch(self, site):
        """chromium-headless-shell, forced onto QUIC, loads a page whose script fetches the file;
        success when the page and all of the file's bytes arrived."""
        profile = tempfile.mkdtemp(prefix="chrome-", dir=self.work)
        argv = chromium.command(profile, self.spki, f"https://{site}/index.html",
                                      self.args.timeout,
                                      ["--enable-quic", f"--origin-to-force-quic-on={site}:443"])
        t0 = time.time()
        res = lab_helpers.in_host(self.lab, "client", *argv, check=False,
                                  timeout=self.args.timeout + 30)
        took = time.time() - t0
        shutil.rmtree(profile, ignore_errors=True)
        whole = f"file bytes: {self.args.size_mb * 1000 * 1000}<"
        return PAGE_TEXT in res.stdout and whole in res.stdout, took

    def run_path(self, path):
        with path_modes.PathModes(self.lab, self.procs, self.work).using(path) as modes:
            def channel_bytes():
                if path != path_modes.TUN:
                    return wg_bytes(self.lab)
                # quicstep-tun carries the channel itself: its own count (IP bytes both ways)
                ch = modes.quicstepd_status()["paths"]["channel"]
                return ch["bytes"] + ch["in_bytes"]
            if path == path_modes.TUN:
                log("quicstep-tun running: the client's routes go into its TUN, its own "
                    "WireGuard helper carries the channel")
            if path == "QUICstep":
                st = modes.quicstepd_status()
                why = st.get("routed_unavailable")
                log(f"quicstepd running: native path {st['native_path']}"
                    + (f" (routed unavailable: {why})" if why else "")
                    + f", {st['channel']['addressing']} addressing")
            for client, site in [(c, s) for c in CLIENTS for s in SITES]:
                pcap = os.path.join(self.work, f"censor-{len(self.rows)}.pcap")
                cap = captures.start(self.procs, self.censor_ns, self.censor_if, pcap)
                before = channel_bytes()
                ok, took = self.fetch(client, site)
                channel = channel_bytes() - before
                time.sleep(1.0)
                self.procs.stop(cap)
                seen = captures.inspect(pcap)
                # The censor also carries the WireGuard tunnel (opaque UDP to the provider):
                # "native" counts only the rest.
                native = sum(p["ip_len"] for p in seen if p.get("proto") in ("udp", "tcp")
                             and not {p.get("src"), p.get("dst")} & self.wg_endpoint)
                names = sorted({p["tls"]["sni"] for p in seen if p.get("tls", {}).get("sni")} |
                               {q["name"] for p in seen if p.get("dns") and not p["dns"]["response"]
                                for q in p["dns"]["questions"]})
                self.rows.append((client, path, site, "ok" if ok else "FAILED", took,
                                  channel, native, ", ".join(names) or "-"))
                log(f"{client:10} {path:9} {site:13} {'ok' if ok else 'FAILED'} in {took:.1f} s")

    def table(self):
        head = ("client", "path", "site", "result", "time s", "channel bytes", "native bytes",
                "names the censor saw")
        print("\nchannel bytes: through the WireGuard interface (both ways); native bytes: IP bytes on")
        print("the censor's client-facing link outside the tunnel; names: SNIs and DNS questions there")
        rows = [head] + [(c, p, s, r, f"{t:.1f}", f"{ch:,}", f"{n:,}", names)
                         for c, p, s, r, t, ch, n, names in self.rows]
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
        print()
        for i, r in enumerate(rows):
            print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
            if i == 0:
                print("  ".join("-" * w for w in widths))
        print()
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump([dict(zip(head, r)) for r in self.rows], f, indent=2)

    def down(self):
        self.procs.stop_all()
        if self.censor:
            subprocess.run([CENSOR_START, "stop"], capture_output=True, timeout=60)
        # The mode's config names the guard's pins (the lab's bpffs), which --cleanup removes.
        config = os.path.join(self.work, "quicstepd.toml")
        subprocess.run(["ip", "netns", "exec", "qs-client", quicstepd.daemon(), "--cleanup",
                        *(["--config", config] if os.path.exists(config) else [])],
                       capture_output=True, timeout=30)
        if self.args.tun:
            subprocess.run(["ip", "netns", "exec", "qs-client", binaries.path("quicstep-tun"),
                            "--cleanup", "--control-socket",
                            os.path.join(self.work, "control.sock")],
                           capture_output=True, timeout=30)
        lab_helpers.qslab("down", check=False, timeout=120)
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="default", help="lab link profile (lab/qslab profiles)")
    ap.add_argument("--channel-rate", type=float, default=5,
                    help="channel rate in Mbit/s (0: unlimited); default 5, as in the paper's Table 5")
    ap.add_argument("--size-mb", type=int, default=10, help="size of the fetched file")
    ap.add_argument("--timeout", type=int, default=90, help="seconds per fetch")
    ap.add_argument("--no-censor", action="store_true", help="leave the censor off")
    ap.add_argument("--json", help="also write the table to this file")
    ap.add_argument("--tun", action="store_true",
                    help="also through quicstep-tun, the TUN engine (the Android app's engine "
                         "on Linux: client/tun)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("demo: run as root (it builds network namespaces)")
    demo = Demo(args)
    try:
        demo.up()
        for path in path_modes.MODES + ((path_modes.TUN,) if args.tun else ()):
            demo.run_path(path)
        demo.table()
    finally:
        demo.down()
    return 0 if all(r[3] == "ok" for r in demo.rows if not (r[2] == "blocked.test" and r[1] == "native")) else 1


if __name__ == "__main__":
    sys.exit(main())
