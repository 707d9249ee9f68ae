"""The fault soak: mixed traffic through quicstepd on the lab for a given time while faults
are injected at random, and per fault what the user got — fetches completed and failed, the
time until work resumed, leaks on the native link — with the daemon's memory and file
descriptors over time.

    python3 -m tests.soak.soak --minutes 5 --out /tmp/soak          # root, the shared lab

Traffic, in threads: short HTTP/3 fetches (gtlsclient, 100 KB, IPv4 and IPv6 in turn), bulk
fetches (10 MB), DNS lookups through the channel (dig), and Chromium page loads (unless
--no-chromium). quicstepd runs with the default config under a supervisor that restarts it
one second after it dies, as its systemd unit does (Restart=on-failure, RestartSec=1).

Faults (--faults, default all), one at a time, every --interval seconds (random within
±25%), in a shuffled order that visits each before repeating one:
  kill9          SIGKILL quicstepd (the supervisor restarts it)
  sighup         reload
  flush_ruleset  `nft flush ruleset` in the client (a firewall reload, a container engine)
  flush_rules    every `ip rule` flushed, then the rules that are not quicstepd's put back
                 (a network manager rewriting its own)
  guard_detach   the tc guard of the native device removed (routed path)
  address        the native address replaced by a new one (a new DHCP lease)
  link           the native link down for 2 s, then up (its IPv6 address put back, as SLAAC
                 would: the kernel drops it with the link)
  channel        the WireGuard device down for 2 s, then up
  flood          20,000 malformed datagrams to the QUIC port

Leaks: tcpdump on the censor's client-facing link keeps only what must never leave the
client natively (TCP, DNS, QUIC long headers from its native addresses); afterwards
quicstep-inspect reads it and every packet found is a leak. Recovery: from the fault to the
end of the first successful probe fetch (100 KB; started right after the fault, then one more
every 0.5 s beside those still running, IPv4 and IPv6 in turn, until one succeeds). The run passes when there
is no leak, every fault is followed by a recovery within --recover seconds, the daemon's
memory at the end is within --memory-slack MB of its median after the first fault, and
the daemon was never found stopped except by a kill9 fault. The server (Debian's ngtcp2
gtlsserver) is restarted when it dies, as a server's supervisor would; each death is in the
report with the server's last line (it can abort on a path change during its PMTUD). Writes soak.json and
soak.md (the report) in --out, and prints the report.
"""
import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

from qs_support import artifacts, captures, certs, chromium, procs, quicstepd
from qs_support import lab as qslab

FAULTS = ("kill9", "sighup", "flush_ruleset", "flush_rules", "guard_detach", "address",
          "link", "channel", "flood")
SHORT, BULK = "100K.bin", "10M.bin"


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = args.out
        self.procs = procs.Procs()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.fetches = []   # (kind, family, start, end, ok, detail)
        self.faults = []    # (name, time, detail)
        self.samples = []   # (time, rss_kb, fds, pid)
        self.daemon = None
        self.daemon_restarts = 0
        self.expected_down = threading.Event()

    # --- the lab and its peers -------------------------------------------------------------

    def up(self):
        qslab.wait_idle()
        qslab.qslab("up", timeout=240)
        self.lab = qslab.status()
        c = self.lab["client"]
        self.ns, self.native_if = c["netns"], c["native"]["interface"]
        self.channel_if = c["channel"]["interface"]
        self.native4, self.native6 = c["native"]["v4"], c["native"]["v6"]
        srv = self.lab["servers"][0]
        self.srv_ns, self.srv4, self.srv6 = srv["netns"], srv["v4"], srv["v6"]
        htdocs = os.path.join(self.work, "htdocs")
        os.makedirs(htdocs, exist_ok=True)
        for name, size in ((SHORT, 100_000), (BULK, 10_000_000)):
            with open(os.path.join(htdocs, name), "wb") as f:
                f.write(os.urandom(size))
        with open(os.path.join(htdocs, "page.txt"), "w") as f:
            f.write("q" * 100_000)
        with open(os.path.join(htdocs, "index.html"), "w") as f:
            f.write("<html><body><script>var x=new XMLHttpRequest();x.open('GET','/page.txt',"
                    "false);x.send();document.write('LEN='+x.responseText.length)</script>"
                    "</body></html>\n")
        key, cert, self.spki = certs.make_certificate(self.work)
        self.server_argv = ["gtlsserver", "--quiet", f"--htdocs={htdocs}", "*", "443", key,
                            cert]
        self.server_deaths = []  # (time, exit code, its log's last line)
        self.start_server()
        self.config = quicstepd.write_config(os.path.join(self.work, "quicstepd.toml"),
                                             self.channel_if)
        self.sock = os.path.join(self.work, "control.sock")
        self.start_daemon()
        cen = self.lab["censor"]
        self.leak_pcap = os.path.join(self.work, "native-leaks.pcap")
        natives = " or ".join(f"src host {a}" for a in self.native4 + self.native6 +
                              [self.spare4(), self.spare6()])
        quic_long = ("(udp and not port 51820 and ((ip and udp[8] & 0x80 = 0x80) or "
                     "(ip6 and ip6[48] & 0x80 = 0x80)))")
        filt = f"({natives}) and (tcp or port 53 or {quic_long})"
        self.leak_capture = self.procs.start(
            cen["netns"], ["tcpdump", "-i", cen["client_interface"], "-w", self.leak_pcap, "-n",
                           "-s", "0", "-B", "65536", filt], self.leak_pcap + ".log")
        if not captures.started(self.leak_pcap):
            raise RuntimeError("tcpdump on the native link did not start")

    def spare4(self):
        return self.native4[0].rsplit(".", 1)[0] + ".9"

    def spare6(self):
        return self.native6[0].rsplit(":", 1)[0] + ":9"

    def down(self):
        self.stop.set()
        self.expected_down.set()
        if self.daemon and self.daemon.poll() is None:
            procs.stop(self.daemon, signal.SIGTERM, 20)
        self.procs.stop_all()
        subprocess.run(["ip", "netns", "exec", self.ns, quicstepd.daemon(), "--cleanup",
                        "--config", self.config], capture_output=True, timeout=60)
        qslab.down(failed=not self.passed)

    # --- quicstepd under a supervisor --------------------------------------------------------

    def start_daemon(self):
        log = os.path.join(self.work, f"quicstepd-{self.daemon_restarts}.log")
        self.daemon = procs.start(self.ns, [quicstepd.daemon(), "--config", self.config,
                                            "--control", self.sock], log)
        quicstepd.wait_daemon(self.ns, self.sock, self.daemon, timeout=30)

    # --- the server, restarted when it dies -----------------------------------------------

    def start_server(self):
        self.server_log = os.path.join(self.work, f"gtlsserver-{len(self.server_deaths)}.log")
        self.server = self.procs.start(self.srv_ns, self.server_argv, self.server_log)

    def supervise_server(self):
        """Debian's ngtcp2 server can abort on a client's path change (an assertion in its
        PMTUD, seen when a restarted quicstepd puts a native flow back on the channel). A
        server's supervisor would restart it: so does this one, and the report says each
        death with the server's last words — the daemon's recovery is then measured against
        a server that is up again, and the crash is not hidden."""
        while not self.stop.wait(0.2):
            if self.server.poll() is None:
                continue
            with open(self.server_log, errors="replace") as f:
                last = ([l.strip() for l in f if l.strip()] or ["(no output)"])[-1]
            self.server_deaths.append((time.time(), self.server.returncode, last))
            print(f"soak: {time.strftime('%H:%M:%S')} the server died "
                  f"(exit {self.server.returncode}): {last}; restarted", flush=True)
            self.start_server()

    def supervise(self):
        while not self.stop.wait(0.2):
            if self.daemon.poll() is None:
                continue
            if not self.expected_down.is_set():
                self.record_fault("daemon_died", f"exit {self.daemon.returncode}")
            time.sleep(1.0)  # RestartSec=1
            self.daemon_restarts += 1
            try:
                self.start_daemon()
            except AssertionError as e:
                self.record_fault("daemon_restart_failed", str(e))
            self.expected_down.clear()

    def sample(self):
        while not self.stop.wait(5):
            pid = self.daemon.pid
            try:
                with open(f"/proc/{pid}/status") as f:
                    rss = int(next(l for l in f if l.startswith("VmRSS")).split()[1])
                fds = len(os.listdir(f"/proc/{pid}/fd"))
            except (OSError, StopIteration, ValueError):
                continue
            with self.lock:
                self.samples.append((time.time(), rss, fds, pid))

    # --- traffic --------------------------------------------------------------------------

    def record(self, kind, family, start, ok, detail=""):
        with self.lock:
            self.fetches.append((kind, family, start, time.time(), ok, detail))

    def fetch(self, kind, name, family, size, timeout):
        out = os.path.join(self.work, "dl", f"{kind}-{threading.get_ident()}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        dest = self.srv4 if family == 4 else self.srv6
        start = time.time()
        res = subprocess.run(["ip", "netns", "exec", self.ns, "timeout", "-k", "2", str(timeout),
                              "gtlsclient", "--quiet", "--exit-on-all-streams-close",
                              f"--download={out}", "--timeout=10s", dest, "443",
                              f"https://open.test/{name}"], capture_output=True, text=True)
        path = os.path.join(out, name)
        ok = os.path.exists(path) and os.path.getsize(path) == size
        self.record(kind, family, start, ok, "" if ok else f"exit {res.returncode}")
        return ok

    def short_loop(self):
        family = 4
        while not self.stop.is_set():
            self.fetch("short", SHORT, family, 100_000, 15)
            family = 6 if family == 4 else 4
            self.stop.wait(0.2)

    def bulk_loop(self):
        while not self.stop.is_set():
            self.fetch("bulk", BULK, 4, 10_000_000, 60)
            self.stop.wait(1)

    def dns_loop(self):
        resolver = self.lab["client"]["resolvers"][0]
        while not self.stop.is_set():
            start = time.time()
            res = subprocess.run(["ip", "netns", "exec", self.ns, "dig", "+short", "+time=2",
                                  "+tries=1", f"@{resolver}", "open.test", "A"],
                                 capture_output=True, text=True)
            self.record("dns", 4, start, res.returncode == 0 and bool(res.stdout.strip()))
            self.stop.wait(1)

    def chromium_loop(self):
        home = os.path.join(self.work, "chrome")
        flags = ["--enable-quic", "--origin-to-force-quic-on=open.test:443",
                 f"--host-resolver-rules=MAP open.test {self.srv4}"]
        while not self.stop.is_set():
            shutil.rmtree(home, ignore_errors=True)
            os.makedirs(home)
            start = time.time()
            res = subprocess.run(["ip", "netns", "exec", self.ns,
                                  *chromium.command(home, self.spki, "https://open.test/index.html",
                                                    30, flags)],
                                 capture_output=True, text=True)
            self.record("chromium", 4, start, "LEN=100000" in res.stdout)
            self.stop.wait(5)

    # --- faults ---------------------------------------------------------------------------

    def record_fault(self, name, detail=""):
        with self.lock:
            self.faults.append((name, time.time(), detail))
        print(f"soak: {time.strftime('%H:%M:%S')} {name} {detail}", flush=True)

    def sh(self, *cmd, check=False):
        return subprocess.run(["ip", "netns", "exec", self.ns, *cmd], capture_output=True,
                              text=True, check=check)

    def inject(self, name):
        if name == "kill9":
            self.expected_down.set()
            self.record_fault(name, f"pid {self.daemon.pid}")
            os.kill(self.daemon.pid, signal.SIGKILL)
        elif name == "sighup":
            self.record_fault(name)
            os.kill(self.daemon.pid, signal.SIGHUP)
        elif name == "flush_ruleset":
            self.record_fault(name)
            self.sh("nft", "flush", "ruleset")
        elif name == "flush_rules":
            # A network manager rewriting the rules: all flushed, its own put back.
            keep = {}
            for fam in ("-4", "-6"):
                rules = json.loads(self.sh("ip", "-j", fam, "rule", "show").stdout or "[]")
                keep[fam] = [r for r in rules if r.get("priority") not in quicstepd.RULE_PRIORITIES
                             and r.get("priority") != 0]
            self.record_fault(name)
            for fam in ("-4", "-6"):
                self.sh("ip", fam, "rule", "flush")
                for r in keep[fam]:
                    self.sh("ip", fam, "rule", "add", *quicstepd.rule_words(r))
        elif name == "guard_detach":
            self.record_fault(name, self.native_if)
            self.sh("tc", "filter", "del", "dev", self.native_if, "egress")
            self.sh("tc", "filter", "del", "dev", self.native_if, "ingress")
            quicstepd.detach_guard(self.native_if)  # its tcx links, by their pins
        elif name == "address":
            old4, old6 = self.current_native()
            new4 = self.spare4() if old4 != self.spare4() else self.native4[0]
            new6 = self.spare6() if old6 != self.spare6() else self.native6[0]
            self.record_fault(name, f"{old4} -> {new4}, {old6} -> {new6}")
            gw4 = self.lab["client"]["native"]["gateway_v4"]
            gw6 = self.lab["client"]["native"]["gateway_v6"]
            # The new address is a secondary one in the old one's subnet: without promotion
            # (systemd's sysctl defaults turn it on) the kernel deletes it with the primary.
            self.sh("sysctl", "-qw", f"net.ipv4.conf.{self.native_if}.promote_secondaries=1")
            self.sh("ip", "addr", "add", f"{new4}/24", "dev", self.native_if)
            self.sh("ip", "-6", "addr", "add", f"{new6}/64", "dev", self.native_if, "nodad")
            self.sh("ip", "route", "replace", "default", "via", gw4, "src", new4)
            self.sh("ip", "-6", "route", "replace", "default", "via", gw6, "src", new6)
            self.sh("ip", "addr", "del", f"{old4}/24", "dev", self.native_if)
            self.sh("ip", "-6", "addr", "del", f"{old6}/64", "dev", self.native_if)
        elif name == "link":
            self.record_fault(name, self.native_if)
            self.sh("ip", "link", "set", self.native_if, "down")
            time.sleep(2)
            self.sh("ip", "link", "set", self.native_if, "up")
            gw4 = self.lab["client"]["native"]["gateway_v4"]
            gw6 = self.lab["client"]["native"]["gateway_v6"]
            old4, old6 = self.current_native(default=True)
            # The kernel drops the IPv6 addresses with the link (keep_addr_on_down=0); SLAAC
            # or the network manager puts the address back, as this does.
            self.sh("ip", "-6", "addr", "replace", f"{old6}/64", "dev", self.native_if, "nodad")
            self.sh("ip", "route", "replace", "default", "via", gw4, "src", old4)
            self.sh("ip", "-6", "route", "replace", "default", "via", gw6, "src", old6)
        elif name == "channel":
            self.record_fault(name, self.channel_if)
            self.sh("ip", "link", "set", self.channel_if, "down")
            time.sleep(2)
            self.sh("ip", "link", "set", self.channel_if, "up")
            # What `wg-quick up` puts back, the lab's: the IPv6 address (the kernel drops it
            # with the link; a daemon started later reads its tunnel addresses from the
            # device) and the default routes in the channel table.
            self.sh("ip", "-6", "addr", "replace", f"{self.lab['client']['channel']['v6']}/128",
                    "dev", self.channel_if, "nodad")
            for fam in ("-4", "-6"):
                self.sh("ip", fam, "route", "replace", "default", "dev", self.channel_if,
                        "table", str(self.lab["client"]["channel"]["table"]))
        elif name == "flood":
            self.record_fault(name, "20000 random datagrams to :443 from 50 sockets")
            flood = ("import os, socket\n"
                     f"dst = ('{self.srv4}', 443)\n"
                     "socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(50)]\n"
                     "for i in range(20000):\n"
                     "    n = 1 + os.urandom(1)[0] * 5\n"
                     "    socks[i % 50].sendto(os.urandom(n), dst)\n")
            self.sh("python3", "-c", flood)
        else:
            raise ValueError(name)

    def current_native(self, default=False):
        """The native address of each family the default route uses now."""
        found = []
        for fam, addrs in (("-4", self.native4 + [self.spare4()]),
                           ("-6", self.native6 + [self.spare6()])):
            shown = self.sh("ip", fam, "-o", "addr", "show", "dev", self.native_if).stdout
            have = [a for a in addrs if f" {a}/" in shown]
            found.append(have[0] if have else addrs[0])
        return found

    def fault_loop(self):
        names = [f for f in self.args.faults]
        if not self.routed():
            names = [f for f in names if f != "guard_detach"]
        order = []
        self.stop.wait(self.args.warmup)
        while not self.stop.is_set():
            if not order:
                order = names[:]
                self.rng.shuffle(order)
            self.inject(order.pop())
            threading.Thread(target=self.recovery_probe, args=(time.time(),),
                             daemon=True).start()
            self.stop.wait(self.args.interval * self.rng.uniform(0.75, 1.25))

    def recovery_probe(self, since):
        """Right after a fault, short fetches (IPv4 and IPv6 in turn), a new one every 0.5 s
        beside any still running, until one succeeds or --recover has passed: the time to
        recover is not the traffic loop's, which may still wait on a fetch started before
        the fault."""
        done, family, attempts = threading.Event(), 4, []

        def attempt(fam):
            if self.fetch("probe", SHORT, fam, 100_000, self.args.recover):
                done.set()
        while not done.is_set() and not self.stop.is_set() \
                and time.time() - since < self.args.recover:
            t = threading.Thread(target=attempt, args=(family,), daemon=True)
            t.start()
            attempts.append(t)
            family = 6 if family == 4 else 4
            done.wait(0.5)
        for t in attempts:
            t.join(timeout=self.args.recover + 5)

    def routed(self):
        try:
            s = json.loads(quicstepd.ctl(self.ns, self.sock, "status", "--json").stdout)
            return s.get("native_path") == "routed"
        except (AssertionError, ValueError):
            return True

    # --- the run and its report ---------------------------------------------------------------

    def run(self):
        self.passed = False
        threads = [threading.Thread(target=t, daemon=True) for t in (
            self.supervise, self.supervise_server, self.sample, self.short_loop, self.bulk_loop, self.dns_loop,
            self.fault_loop, *(() if self.args.no_chromium else (self.chromium_loop,)))]
        for t in threads:
            t.start()
        end = time.time() + self.args.minutes * 60
        while time.time() < end and not self.stop.is_set():
            time.sleep(1)
        self.stop.set()
        for t in threads:
            t.join(timeout=90)
        self.procs.stop(self.leak_capture)
        leaks = captures.leaks(captures.inspect(self.leak_pcap),
                               set(self.native4 + self.native6 + [self.spare4(), self.spare6()]))
        return self.report(leaks)

    def report(self, leaks):
        a = self.args
        per = {}
        probes = sorted((f for f in self.fetches if f[0] == "probe"), key=lambda f: f[3])
        faults = [f for f in self.faults if f[0] in FAULTS]
        problems = [f for f in self.faults if f[0] not in FAULTS]
        for i, (name, t, detail) in enumerate(faults):
            until = faults[i + 1][1] if i + 1 < len(faults) else float("inf")
            window = [f for f in self.fetches if t <= f[2] < until and f[0] != "probe"]
            first_ok = next((f for f in probes if f[2] >= t and f[4]), None)
            recovered = first_ok[3] - t if first_ok and first_ok[3] < until else None
            leak_n = sum(1 for _, p in leaks if t <= p.get("time", 0) < until)
            e = per.setdefault(name, {"count": 0, "ok": 0, "failed": 0, "recovery_s": [],
                                      "not_recovered": 0, "leaks": 0})
            e["count"] += 1
            e["ok"] += sum(1 for f in window if f[4])
            e["failed"] += sum(1 for f in window if not f[4])
            e["leaks"] += leak_n
            if recovered is None or recovered > a.recover:
                e["not_recovered"] += 1
            if recovered is not None:
                e["recovery_s"].append(round(recovered, 2))
        rss = [s[1] for s in self.samples]
        after_first = [s[1] for s in self.samples if faults and s[0] >= faults[0][1]] or rss
        base = statistics.median(after_first) if after_first else 0
        grew = (rss[-1] - base) / 1024 if rss else 0
        fds = [s[2] for s in self.samples]
        ok = (not leaks and all(e["not_recovered"] == 0 for e in per.values())
              and grew <= a.memory_slack and not problems and faults)
        self.passed = bool(ok)
        doc = {"minutes": a.minutes, "seed": a.seed, "interval_s": a.interval,
               "faults": per, "timeline": [{"fault": n, "time": t, "detail": d}
                                            for n, t, d in self.faults],
               "problems": problems, "leaks": len(leaks),
               "leak_examples": [{"kind": k, "packet": p} for k, p in leaks[:10]],
               "fetches": {k: {"ok": sum(1 for f in self.fetches if f[0] == k and f[4]),
                               "failed": sum(1 for f in self.fetches if f[0] == k and not f[4])}
                           for k in ("short", "bulk", "dns", "chromium")},
               "daemon": {"restarts": self.daemon_restarts,
                          "rss_kb_min": min(rss) if rss else None,
                          "rss_kb_max": max(rss) if rss else None,
                          "rss_kb_end": rss[-1] if rss else None,
                          "rss_growth_mb_after_first_fault": round(grew, 2),
                          "fds_min": min(fds) if fds else None,
                          "fds_max": max(fds) if fds else None},
               "fetch_log": [{"kind": k, "family": fam, "start": st, "end": en, "ok": ok,
                              "detail": d} for k, fam, st, en, ok, d in self.fetches],
               "server_deaths": [{"time": t, "exit": c, "last_line": l}
                                 for t, c, l in self.server_deaths],
               "samples": self.samples, "passed": self.passed}
        with open(os.path.join(self.work, "soak.json"), "w") as f:
            json.dump(doc, f, indent=1)
        lines = [f"# Fault soak: {a.minutes} min, seed {a.seed}, a fault every ~{a.interval} s",
                 "", f"**{'passed' if self.passed else 'FAILED'}**: {len(leaks)} leaks on the "
                 f"native link; daemon restarted {self.daemon_restarts} times; RSS "
                 f"{doc['daemon']['rss_kb_min']}–{doc['daemon']['rss_kb_max']} kB "
                 f"(end {doc['daemon']['rss_kb_end']}, {grew:+.2f} MB against the median after "
                 f"the first fault), fds {doc['daemon']['fds_min']}–{doc['daemon']['fds_max']}.",
                 "", "| fault | times | fetches ok | failed | recovery s (median, max) | "
                 f"not recovered within {a.recover} s | leaks |", "|---|---|---|---|---|---|---|"]
        for name in sorted(per):
            e = per[name]
            r = e["recovery_s"]
            rec = f"{statistics.median(r):.2f}, {max(r):.2f}" if r else "-"
            lines.append(f"| {name} | {e['count']} | {e['ok']} | {e['failed']} | {rec} | "
                         f"{e['not_recovered']} | {e['leaks']} |")
        t0 = faults[0][1] if faults else 0
        lines += ["", "Faults in order: " + ", ".join(
            f"{n} (+{t - t0:.0f} s)" for n, t, _ in faults)]
        lines += ["", "Traffic: " + ", ".join(
            f"{k} {v['ok']} ok / {v['failed']} failed" for k, v in doc["fetches"].items())]
        if self.server_deaths:
            lines += ["", f"The server (gtlsserver) died {len(self.server_deaths)} times and was "
                      "restarted: " + "; ".join(f"+{t - t0:.0f} s exit {c}: {l}"
                                                for t, c, l in self.server_deaths)]
        if problems:
            lines += ["", "Problems: " + "; ".join(f"{n} {d}" for n, _, d in problems)]
        text = "\n".join(lines) + "\n"
        with open(os.path.join(self.work, "soak.md"), "w") as f:
            f.write(text)
        print(text, flush=True)
        return self.passed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=5)
    p.add_argument("--interval", type=float, default=30, help="seconds between faults")
    p.add_argument("--warmup", type=float, default=15, help="seconds before the first fault")
    p.add_argument("--faults", default=",".join(FAULTS),
                   type=lambda s: [f for f in s.split(",") if f],
                   help=f"which faults (default all: {','.join(FAULTS)})")
    p.add_argument("--recover", type=float, default=10,
                   help="a fault must be followed by a successful short fetch within this "
                        "many seconds (default 10)")
    p.add_argument("--memory-slack", type=float, default=8,
                   help="MB the daemon's RSS may grow past its median after the first fault")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--no-chromium", action="store_true")
    p.add_argument("--out", default=None, help="work and report directory (kept)")
    args = p.parse_args()
    bad = [f for f in args.faults if f not in FAULTS]
    if bad:
        p.error(f"--faults: unknown {bad[0]!r} (known: {', '.join(FAULTS)})")
    if os.geteuid() != 0:
        sys.exit("soak: run as root (the lab's namespaces)")
    args.out = args.out or artifacts.work_dir("qs-soak-")
    os.makedirs(args.out, exist_ok=True)
    os.chmod(args.out, 0o755)
    soak = Soak(args)
    soak.passed = False
    try:
        soak.up()
        soak.run()
    finally:
        soak.down()
    print(f"soak: report in {os.path.join(args.out, 'soak.md')}")
    return 0 if soak.passed else 1


if __name__ == "__main__":
    sys.exit(main())
