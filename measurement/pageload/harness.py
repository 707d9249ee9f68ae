"""One batch of page loads on the shared lab: bring it up with a link profile (and channel
rate), serve the pages over HTTP/3 with gtlsserver from the server namespaces, then for each
round and each mode (native, full VPN, QUICstep, switched by qs_support/path_modes.py;
the order rotates every round) load every page with a fresh chromium-headless-shell driven
over the DevTools protocol, and record Navigation Timing, the protocol Chromium used, the
bytes through the provider (one capture of the WireGuard endpoint at the provider, split by
each load's time window) and, in the QUICstep mode, quicstepd's migration counters. The
caller holds the lab lock."""
import csv
import os
import shutil
import struct
import subprocess
import tempfile
import time

from measurement.pageload import cdp, pages
from measurement.pageload import corpus as corpus_lib
from qs_support import binaries, captures, certs, chromium, path_modes, quicstepd, shadowsocks
from qs_support import lab as qslab_lab
from qs_support.procs import Procs

MODES = path_modes.MODES
# A variant: (label in the CSV, mode of qs_support/path_modes.py, quicstepd config extra).
DEFAULT_VARIANTS = [(m, m, "") for m in MODES]
# quicstepd holding a flow's short headers on the channel for 100 ms after the first one
# (about one RTT of london-ohio): the server has the client's Finished before the move.
HOLD_VARIANT = ("QUICstep hold 100ms", "QUICstep", "[hold]\ntime_ms = 100\n")
# The routed path's hold at the switch ([native_switch] hold): a flow's short headers wait
# in a queue from the first until its switch, then leave natively (the request included).
SWITCH_HOLD_VARIANT = ("QUICstep switch hold", "QUICstep", "[native_switch]\nhold = true\n")
# The hold at the switch with lift datagrams: the server may send the response's first flight
# while it validates the new address (measurement/results/2026-12-06-hold-lift.md).
HOLD_LIFT_VARIANT = ("QUICstep switch hold lift", "QUICstep",
                     "[native_switch]\nhold = true\nlift_bytes = 9600\n")
# quicstepd's two native paths side by side (the default "auto" takes the routed one in the
# lab): the queue path written out.
QUEUE_PATH_VARIANT = ("QUICstep queue path", "QUICstep", 'native_path = "queue"\n')
# quicstepd with permissive addressing (the paper's mode; the provider accepts the client's
# native addresses for it): the server sees no address change, so nothing migrates, and
# the move costs no path validation or congestion reset.
PERMISSIVE_VARIANT = (path_modes.QS_PERMISSIVE, path_modes.QS_PERMISSIVE, "")
# quicstepd keeping each flow on the channel for its first 64 outbound short headers (a
# download's ACKs: about its first 150 KB): small flows never move.
STAY_VARIANT = ("QUICstep hold 64 packets", "QUICstep", "[hold]\npackets = 64\n")
# The TUN engine (quicstep-tun, client/tun) in QUICstep's place: the Android app's engine.
TUN_VARIANT = (path_modes.TUN, path_modes.TUN, "")
# The user's real alternative where WireGuard is blocked: a Shadowsocks proxy client
# (qs_support/shadowsocks.py), as the full proxy and as QUICstep's tproxy channel.
PROXY_VARIANTS = [("native", "native", ""),
                  (path_modes.FULL_PROXY, path_modes.FULL_PROXY, ""),
                  (path_modes.QS_PROXY, path_modes.QS_PROXY, "")]
# Where the corpus of seed 0 is written once and kept (438.7 MB; checked before each use).
CORPUS_CACHE = "/var/tmp/quicstep-pageload-corpus-seed0"
FIELDS = ["experiment", "profile", "channel_rate_mbit", "round", "mode", "page", "page_bytes",
          "ok", "error", "ttfb_ms", "plt_ms", "protocol", "responses", "non_h3_responses",
          "received_bytes", "channel_bytes", "channel_packets", "wall_s", "qs_moved_native",
          "qs_confirmed", "qs_failed_back", "qs_native_in_bytes", "qs_channel_bytes",
          "started_unix"]


def log(msg):
    print(f"pageload: {msg}", flush=True)


def start_provider_capture(procs, lab, path, proxy=False):
    """Headers only of the WireGuard packets (with `proxy`, the Shadowsocks server's, TCP and
    UDP) on the provider's uplink: the channel's load (encrypted packets both ways, IP
    bytes)."""
    prov = lab["provider"]
    port = ["port", str(shadowsocks.PORT)] if proxy else ["udp", "port", str(prov["listen_port"])]
    p = procs.start(prov["netns"], ["tcpdump", "-i", prov["uplink_interface"], "-w", path, "-n",
                                    "-s", "96", "-B", "65536", *port], path + ".log")
    if captures.started(path):
        return p
    raise RuntimeError("tcpdump at the provider did not start")


def pcap_packets(path):
    """(timestamp, IP length) of every packet of a classic pcap file."""
    link = captures.link_header_len(path)
    out = []
    with open(path, "rb") as f:
        hdr = f.read(24)
        endian = "<" if hdr[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        nano = hdr[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            sec, frac, incl, orig = struct.unpack(endian + "IIII", rec)
            f.seek(incl, 1)
            out.append((sec + frac / (1e9 if nano else 1e6), orig - link))
    return out


def quicstep_server_argv(addr, fam, cert, key, htdocs, *extra):
    """quicstep-server (one worker) serving `htdocs` on `addr`:443 of family `fam`."""
    listen = f"[{addr}]:443" if fam == "v6" else f"{addr}:443"
    return [binaries.path("quicstep-server"), "--listen", listen, "--cert", cert, "--key", key,
            "--workers", "1", "--htdocs", htdocs, *extra]


class Batch:
    def __init__(self, experiment, profile, channel_rate, page_names, rounds, timeout=180,
                 work=None, variants=None, corpus=None, qlog_dir=None, think_ms=None,
                 server_args=()):
        """`corpus`: (its directory, its manifest) from prepare_corpus(); `page_names` are
        then corpus page ids. `qlog_dir`: gtlsserver writes a qlog per connection there.
        `think_ms`: the pages are served by quicstep-server (ngtcp2, as gtlsserver) with
        that think time before each response (and its qlogs in `qlog_dir`); `server_args`:
        more of quicstep-server's options then."""
        self.corpus, self.qlog_dir, self.think_ms = corpus, qlog_dir, think_ms
        self.server_args = list(server_args)
        self.experiment, self.profile, self.rate = experiment, profile, channel_rate
        self.page_names, self.rounds, self.timeout = page_names, rounds, timeout
        self.work = tempfile.mkdtemp(prefix="quicstep-pageload-", dir=work)
        os.chmod(self.work, 0o755)
        self.procs = Procs()
        self.rows = []
        self.variants = variants or DEFAULT_VARIANTS
        self.native_paths = {}  # variant label -> the daemon's native path (its status)

    # --- lab --------------------------------------------------------------------------
    def up(self):
        args = ["up", "--profile", self.profile]
        if self.rate is not None:
            args += ["--channel-rate", str(self.rate)]
        log(f"lab {' '.join(args)}")
        qslab_lab.qslab(*args, timeout=240)
        self.lab = qslab_lab.status()
        self.ns = self.lab["client"]["netns"]
        htdocs = os.path.join(self.work, "htdocs")
        self.catalogue = {name: (f"https://{pages.HOSTS[0]}/{path}", size,
                                 1 + (pages.MANY_COUNT if name == "many" else 0))
                          for name, (path, size) in pages.write(htdocs).items()}
        self.origins = list(pages.HOSTS)
        names = certs.LAB_CERT_NAMES
        if self.corpus:
            out, manifest = self.corpus
            corpus_lib.install(out, htdocs)
            by_id = {p["id"]: p for p in manifest["pages"]}
            self.catalogue.update({pid: (by_id[pid]["url"], by_id[pid]["bytes"],
                                         by_id[pid]["requests"]) for pid in self.page_names})
            self.origins += [o for o in corpus_lib.origins(manifest) if o not in self.origins]
            names = tuple(dict.fromkeys(names + tuple(self.origins)))
        key, cert, self.spki = certs.make_certificate(self.work, names=names)
        if self.corpus:
            self.start_corpus_servers(htdocs, key, cert)
        elif self.think_ms is not None:
            qlog = ["--qlog-dir", self.qlog_dir] if self.qlog_dir else []
            for s in self.lab["servers"]:
                for fam in ("v4", "v6"):
                    self.start_server(s["netns"], quicstep_server_argv(
                        s[fam], fam, cert, key, htdocs, "--migration", "full", "--think-ms",
                        str(self.think_ms), *qlog, *self.server_args),
                        f"quicstep-server-{s['name']}-{fam}")
        else:
            qlog = [f"--qlog-dir={self.qlog_dir}"] if self.qlog_dir else []
            for srv in sorted({s["netns"] for s in self.lab["servers"]}):
                self.start_server(srv, ["gtlsserver", "--quiet", f"--htdocs={htdocs}", *qlog,
                                        "*", "443", key, cert], f"gtlsserver-{srv}")
        proxy = any(base in path_modes.PROXY_MODES for _, base, _ in self.variants)
        if proxy:
            self.start_proxy()
        self.pcap = os.path.join(self.work, "provider.pcap")
        self.capture = start_provider_capture(self.procs, self.lab, self.pcap, proxy)
        self.modes = {label: path_modes.PathModes(self.lab, self.procs, self.work, extra)
                      for label, _, extra in self.variants}
        for m in self.modes.values():
            m.proxy_server = self.proxy_server

    proxy_server = None

    def start_server(self, netns, argv, name):
        p = self.procs.start(netns, argv, os.path.join(self.work, f"{name}.log"))
        time.sleep(0.3)
        if p.poll() is not None:
            raise RuntimeError(f"{name} did not start in {netns}: {' '.join(argv)}")

    def start_corpus_servers(self, htdocs, key, cert):
        """One server per server address and family: gtlsserver (migrates) on the addresses
        of the corpus's migrating origins, quicstep-server --migration none (refuses every
        packet from a new client address) on those of its non-migrating ones (the lab's
        nomigration.test)."""
        names = self.lab["dns"]["names"]
        frozen = {names[n]["server"] for n, kind in corpus_lib.LAB_ORIGINS.items()
                  if kind == "none"}
        for s in self.lab["servers"]:
            for fam in ("v4", "v6"):
                addr = s[fam]
                if s["name"] in frozen:
                    self.start_server(s["netns"], quicstep_server_argv(
                        addr, fam, cert, key, htdocs, "--migration", "none"),
                        f"quicstep-server-{s['name']}-{fam}")
                else:
                    argv = ["gtlsserver", "--quiet", f"--htdocs={htdocs}", addr, "443", key,
                            cert]
                    self.start_server(s["netns"], argv, f"gtlsserver-{s['name']}-{fam}")

    def start_proxy(self):
        """Shadowsocks for the proxy modes; the channel rate limits what the provider sends
        on its uplink (the download leg to the client; the VPN's limit sits on its WireGuard
        devices, which the proxy's packets do not cross)."""
        self.proxy_server, _ = shadowsocks.start_server(self.procs, self.lab, self.work)
        shadowsocks.start_clients(self.procs, self.lab, self.proxy_server, self.work)
        if self.rate:
            prov = self.lab["provider"]
            rate_bps = self.rate * 1e6
            subprocess.run(["ip", "netns", "exec", prov["netns"], "tc", "qdisc", "replace",
                            "dev", prov["uplink_interface"], "root", "tbf", "rate",
                            f"{int(rate_bps)}bit", "burst", str(max(3200, int(rate_bps / 8 * 0.004))),
                            "latency", "100ms"], check=True, timeout=10)

    def down(self):
        self.procs.stop_all()
        # The mode's config names the guard's pins (the lab's bpffs), which --cleanup removes.
        config = os.path.join(self.work, "quicstepd.toml")
        subprocess.run(["ip", "netns", "exec", "qs-client", quicstepd.daemon(), "--cleanup",
                        *(["--config", config] if os.path.exists(config) else [])],
                       capture_output=True, timeout=30)
        qslab_lab.qslab("down", check=False, timeout=120)
        shutil.rmtree(self.work, ignore_errors=True)

    def qsd_status(self, label):
        return self.modes[label].quicstepd_status()

    # --- one page load ----------------------------------------------------------------
    def load(self, round_no, mode, page, base_mode=None):
        """One page load in variant `mode` (its path mode `base_mode`, default the same)."""
        base_mode = base_mode or mode
        url, size, want = self.catalogue[page]
        self.last_timing = None
        row = {"experiment": self.experiment, "profile": self.profile,
               "channel_rate_mbit": "" if self.rate is None else self.rate, "round": round_no,
               "mode": mode, "page": page, "page_bytes": size, "ok": 0, "error": ""}
        daemon_modes = ("QUICstep", path_modes.TUN, path_modes.QS_PROXY,
                        path_modes.QS_PERMISSIVE)
        before = self.qsd_status(mode) if base_mode in daemon_modes else None
        home = tempfile.mkdtemp(prefix="chrome-", dir=self.work)
        origins = ",".join(f"{host}:443" for host in self.origins)
        flags = ["--enable-quic", f"--origin-to-force-quic-on={origins}",
                 f"--ignore-certificate-errors-spki-list={self.spki}"]
        t0 = time.time()
        browser = cdp.Browser(["ip", "netns", "exec", self.ns], chromium.binary(), home,
                              flags, os.path.join(home, "chromium.log"))
        try:
            timing, responses = cdp.load_page(browser, url, self.timeout)
            self.last_timing = timing
            row["ttfb_ms"] = round(timing["responseStart"] - timing["startTime"], 2)
            row["plt_ms"] = round(timing["domComplete"] - timing["responseStart"], 2)
            row["protocol"] = timing.get("nextHopProtocol", "")
            row["responses"] = len(responses)
            row["non_h3_responses"] = sum(r["protocol"] != "h3" for r in responses)
            row["received_bytes"] = sum(r["bytes"] for r in responses)
            bad = [r for r in responses if r["status"] != 200]
            if timing["domComplete"] <= 0 or len(responses) < want or bad:
                row["error"] = f"{len(responses)} responses, {len(bad)} not 200"
            else:
                row["ok"] = 1
        except (cdp.CdpError, KeyError, ValueError) as e:
            row["error"] = str(e)[:200]
        finally:
            browser.close()
            t1 = time.time()
            shutil.rmtree(home, ignore_errors=True)
        row["started_unix"], row["wall_s"] = round(t0, 3), round(t1 - t0, 3)
        self._window = (t0, t1)
        if before is not None:
            after = self.qsd_status(mode)
            self.native_paths.setdefault(mode, after.get("native_path", "?"))
            wd0, wd1 = before["watchdog"], after["watchdog"]
            row["qs_moved_native"] = wd1["moved_native"] - wd0["moved_native"]
            row["qs_confirmed"] = wd1["confirmed"] - wd0["confirmed"]
            row["qs_failed_back"] = wd1["failed_back"] - wd0["failed_back"]
            p0, p1 = before["paths"], after["paths"]
            row["qs_native_in_bytes"] = p1["native"]["in_bytes"] - p0["native"]["in_bytes"]
            row["qs_channel_bytes"] = (p1["channel"]["bytes"] + p1["channel"]["in_bytes"]
                                       - p0["channel"]["bytes"] - p0["channel"]["in_bytes"])
        log(f"{self.experiment} {self.profile} rate={self.rate} r{round_no} {mode:8} {page:5} "
            f"{'ok' if row['ok'] else 'FAILED ' + row['error']} ttfb={row.get('ttfb_ms')} "
            f"plt={row.get('plt_ms')} {row.get('protocol', '')}")
        return row

    def run(self):
        """All rounds; returns the rows (channel bytes filled in from the capture)."""
        windows = []
        for r in range(self.rounds):
            n = len(self.variants)
            for label, base, _ in self.variants[r % n:] + self.variants[:r % n]:
                with self.modes[label].using(base):
                    for page in self.page_names:
                        self.rows.append(self.load(r, label, page, base))
                        windows.append(self._window)
                        time.sleep(0.3)  # let the connection's close leave the window
        time.sleep(1.0)
        self.procs.stop(self.capture)
        packets = pcap_packets(self.pcap)
        for row, (t0, t1) in zip(self.rows, windows):
            inside = [n for ts, n in packets if t0 <= ts <= t1]
            row["channel_bytes"], row["channel_packets"] = sum(inside), len(inside)
        return self.rows


def prepare_corpus(out=CORPUS_CACHE, seed=0):
    """The corpus of `seed` written under `out` (corpus.py), written again only when a file
    is missing or of the wrong size; returns (out, manifest)."""
    manifest = corpus_lib.plan(seed=seed)
    bad = corpus_lib.verify(manifest, out)
    if bad:
        log(f"writing the corpus (seed {seed}) to {out}: {len(bad)} files missing or wrong")
        corpus_lib.write(manifest, out)
        bad = corpus_lib.verify(manifest, out)
        if bad:
            raise RuntimeError(f"corpus at {out}: {bad[:3]}")
    return out, manifest


def append_csv(path, rows, fields=FIELDS):
    """Appends rows (dicts; missing fields empty) to a CSV, with a header when it is new."""
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        for row in rows:
            w.writerow({k: row.get(k, "") for k in fields})
