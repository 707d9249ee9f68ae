#!/usr/bin/env python3
"""A lab population of ~1,000 domains with known migration behaviour, for validating and
benchmarking quicstep-scan (root; throwaway namespaces, removed by name in down()).

Topology (names and addresses reserved for this population):
  qs-prb-c  the prober (and the router: the delay line runs here)
            qprb-cs 198.18.128.1 and .2 (second local address), 2001:db8:128::1 and ::2
            qprb-cd 198.18.129.1, 2001:db8:128:1::1
  qs-prb-s1 every server: qprb-sc 198.18.128.10, 2001:db8:128::10; backends on that link:
            quicstep-server .20-.27 (::20-::27: 4 migration behaviours x Retry off/on),
            gtlsserver .30 (::30), a TCP-only host .40 (::40: TCP 443 listens, UDP answers
            ICMP port unreachable)
  qs-prb-d  dnsmasq on 198.18.129.53 / 2001:db8:128:1::53, A and AAAA for <d>.scan.test
            and www.<d>.scan.test from a generated hosts file; other names under scan.test
            are NXDOMAIN

Every domain has addresses of its own: group g's domains live in 198.18.<g>.0/24 and
2001:db8:128:<g>::/64 (g = 130..139, 141; silent ones in 198.18.144.0/21, up to 2,000;
198.18.140.0/24 belongs to the probe's own tests), routed from qs-prb-c to qs-prb-s1, where nft DNATs each group's range to its backend
(conntrack keeps the domain's address as the source of answers and of ICMP errors); the
silent group's range is dropped by nft. So 1,769 distinct addresses (at scale
1.0) are served by 22 processes (one per backend and family), and each domain's ground truth is the behaviour of the backend its group maps to.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

NS_C, NS_S, NS_D = "qs-prb-c", "qs-prb-s1", "qs-prb-d"
IF_CS, IF_SC, IF_CD, IF_DC = "qprb-cs", "qprb-sc", "qprb-cd", "qprb-dc"
C4, C4_2, S4 = "198.18.128.1", "198.18.128.2", "198.18.128.10"
C6, C6_2, S6 = "2001:db8:128::1", "2001:db8:128::2", "2001:db8:128::10"
CD4, D4, CD6, D6 = "198.18.129.1", "198.18.129.53", "2001:db8:128:1::1", "2001:db8:128:1::53"
ZONE = "scan.test"


@dataclass(frozen=True)
class Group:
    name: str
    octet: int                # its domains' addresses: 198.18.<octet>.0/24, 2001:db8:128:<octet>::/64
    backend: str              # qs (quicstep-server), gtls, tcp, silent, none (no DNS entry), mixed
    host: int                 # backend address: 198.18.128.<host>, 2001:db8:128::<host>
    migration: str = ""       # quicstep-server --migration
    retry: bool = False
    domains: int = 90
    asn: int = 0


GROUPS = (
    Group("full", 130, "qs", 20, "full", False, asn=64600),
    Group("full-retry", 131, "qs", 21, "full", True, asn=64600),
    Group("port-only", 132, "qs", 22, "port-only", False, asn=64601),
    Group("port-only-retry", 133, "qs", 23, "port-only", True, asn=64601),
    Group("none", 134, "qs", 24, "none", False, asn=64602),
    Group("none-retry", 135, "qs", 25, "none", True, asn=64602),
    Group("stale-path", 136, "qs", 26, "stale-path", False, asn=64603),
    Group("stale-path-retry", 137, "qs", 27, "stale-path", True, asn=64603),
    Group("gtlsserver", 138, "gtls", 30, asn=64604),
    Group("tcp-only", 139, "tcp", 40, domains=99, asn=64605),
    Group("silent", 144, "silent", 0, domains=31, asn=64606),
    Group("nxdomain", 0, "none", 0, domains=40),
    Group("mixed", 141, "mixed", 0, domains=40, asn=64607),  # apex: none; www.: full
)
BY_NAME = {g.name: g for g in GROUPS}


def expected(group: Group, second_address: bool) -> Tuple[str, bool]:
    """(class, port migration) that quicstep-scan must find for the group's domains
    (measurement/scan/scanlib/classes.py). port-only follows a new port but not a new
    address: QUICstep-compatible only when no second local address tests the latter."""
    if group.backend in ("tcp", "silent"):
        return "no_quic", False
    if group.backend == "none":
        return "dns_failed", False
    if group.backend == "gtls" or group.backend == "mixed" or group.migration == "full":
        return "quicstep_compatible", True
    if group.migration == "port-only":
        return ("quic_no_migration" if second_address else "quicstep_compatible"), True
    return "quic_no_migration", False


@dataclass(frozen=True)
class Domain:
    name: str
    group: Group
    apex: Tuple[str, ...]  # addresses
    www: Tuple[str, ...]


def prefix4(g: Group) -> str:
    return "198.18.144.0/21" if g.backend == "silent" else f"198.18.{g.octet}.0/24"


def domains(scale: float = 1.0, counts: Optional[Dict[str, int]] = None) -> List[Domain]:
    """The population, interleaved across groups (a list in rank order mixes behaviours).
    Each domain has its own IPv4 address; every other domain's www. has a second one; every
    third domain (but silent ones: each silent address costs a timeout) also has IPv6."""
    per_group = []
    for g in GROUPS:
        n = (counts or {}).get(g.name, max(1, int(g.domains * scale)))
        limit = 2000 if g.backend == "silent" else 99  # the addresses of its prefix
        if n > limit:
            raise ValueError(f"group {g.name}: at most {limit} domains, asked for {n}")
        items = []
        for i in range(n):
            name = f"{g.name.replace('-', '')}{i:03d}.{ZONE}"
            if g.backend == "none":
                items.append(Domain(name, g, (), ()))
                continue
            if g.backend == "mixed":
                items.append(Domain(name, g, (f"198.18.{BY_NAME['none'].octet}.{200 + i}",),
                                    (f"198.18.{BY_NAME['full'].octet}.{200 + i}",)))
                continue
            if g.backend == "silent":  # many: 250 a /24 over 198.18.144.0/21, www. the same
                a4 = f"198.18.{g.octet + i // 250}.{i % 250 + 1}"
                items.append(Domain(name, g, (a4,), (a4,)))
                continue
            a4 = f"198.18.{g.octet}.{i + 1}"
            apex = [a4]
            if i % 3 == 0:
                apex.append(f"2001:db8:128:{g.octet}::{i + 1:x}")
            www = apex if i % 2 == 0 else [f"198.18.{g.octet}.{i + 101}"]
            if g.backend == "tcp" and i % 4 == 1:
                www = []  # no www. name
            items.append(Domain(name, g, tuple(apex), tuple(www)))
        per_group.append(items)
    out = []
    for k in range(max(len(p) for p in per_group)):
        for p in per_group:
            if k < len(p):
                out.append(p[k])
    return out


from qs_support import procs  # noqa: E402  (after the tables)
from qs_support.netns import sh, netns, remove_namespaces  # noqa: E402

# The servers, the DNS and (in the tests) the prober run at this niceness: a scan measures
# the servers' behaviour, so a build beside it on this 2-core machine must not starve them
# into timeouts (seen in a flake hunt: one burst turned ~40 migrating servers into
# "timeout_after_switch").
NICE = -10


def down():
    """Removes the namespaces (ending every process left in them)."""
    remove_namespaces(NS_C, NS_S, NS_D)


def _link(ns_a, if_a, ns_b, if_b, addrs_a, addrs_b):
    sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b,
       "netns", ns_b)
    for ns, ifc, addrs in ((ns_a, if_a, addrs_a), (ns_b, if_b, addrs_b)):
        netns(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifc}.accept_ra=0")
        for a in addrs:
            if ":" in a:
                sh("ip", "-n", ns, "-6", "addr", "add", a, "dev", ifc, "nodad")
            else:
                sh("ip", "-n", ns, "addr", "add", a, "dev", ifc)
        sh("ip", "-n", ns, "link", "set", ifc, "up")


def _nft_rules() -> str:
    lines = ["table inet qsprb {", " chain pre {", "  type nat hook prerouting priority -100;"]
    for g in GROUPS:
        if g.backend in ("qs", "gtls", "tcp"):
            lines.append(f"  ip daddr 198.18.{g.octet}.0/24 dnat ip to 198.18.128.{g.host}")
            lines.append(f"  ip6 daddr 2001:db8:128:{g.octet}::/64 dnat ip6 to 2001:db8:128::{g.host}")
    lines += [" }", " chain drop_silent {", "  type filter hook prerouting priority -150;"]
    g = BY_NAME["silent"]
    lines.append(f"  ip daddr {prefix4(g)} drop")
    lines.append(f"  ip6 daddr 2001:db8:128:{g.octet}::/64 drop")
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


class Population:
    """Builds the namespaces, servers and DNS; `procs` are ended by PID in stop()."""

    def __init__(self, workdir: str, server_bin: str, scale: float = 1.0, workers: int = 1,
                 counts: Optional[Dict[str, int]] = None):
        self.workdir, self.workers = os.path.abspath(workdir), workers
        self.server_bin = os.path.abspath(server_bin) if server_bin else server_bin
        self.domains = domains(scale, counts)
        self.procs: List[Tuple[str, subprocess.Popen]] = []
        self.list_path = os.path.join(workdir, "population.csv")
        self.hosts_path = os.path.join(workdir, "population.hosts")
        self.ip2asn_path = os.path.join(workdir, "population.ip2asn.tsv")
        self.truth_path = os.path.join(workdir, "population.truth.json")
        self.static_hosts_path = os.path.join(workdir, "population.static-hosts")

    def truth(self, second_address: bool) -> Dict[str, Tuple[str, bool]]:
        return {d.name: expected(d.group, second_address) for d in self.domains}

    def write_files(self):
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.list_path, "w") as f:
            for rank, d in enumerate(self.domains, start=1):
                f.write(f"{rank},{d.name}\n")
        with open(self.hosts_path, "w") as f:
            for d in self.domains:
                for name, addrs in ((d.name, d.apex), ("www." + d.name, d.www)):
                    for a in addrs:
                        f.write(f"{a} {name}\n")
        with open(self.static_hosts_path, "w") as f:  # quicstep-probe --static-hosts
            for d in self.domains:
                for name, addrs in ((d.name, d.apex), ("www." + d.name, d.www)):
                    if addrs:
                        f.write(f"{name} {' '.join(addrs)}\n")
        with open(self.ip2asn_path, "w") as f:
            for g in GROUPS:
                if g.asn:
                    last = "198.18.151.255" if g.backend == "silent" else f"198.18.{g.octet}.255"
                    f.write(f"198.18.{g.octet}.0\t{last}\t{g.asn}\tZZ\tLAB-{g.name.upper()}\n")
                    f.write(f"2001:db8:128:{g.octet}::\t2001:db8:128:{g.octet}:ffff:ffff:ffff:ffff"
                            f"\t{g.asn}\tZZ\tLAB-{g.name.upper()}\n")
        with open(self.truth_path, "w") as f:
            json.dump({"with_second_address": self.truth(True),
                       "without_second_address": self.truth(False)}, f, indent=0)

    def up(self):
        down()
        os.makedirs(self.workdir, exist_ok=True)
        self.write_files()
        for ns in (NS_C, NS_S, NS_D):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        backends4 = [f"198.18.128.{g.host}/24" for g in GROUPS if g.backend in ("qs", "gtls", "tcp")]
        backends6 = [f"2001:db8:128::{g.host}/64" for g in GROUPS if g.backend in ("qs", "gtls", "tcp")]
        _link(NS_C, IF_CS, NS_S, IF_SC, [f"{C4}/24", f"{C4_2}/24", f"{C6}/64", f"{C6_2}/64"],
              [f"{S4}/24", f"{S6}/64"] + backends4 + backends6)
        _link(NS_C, IF_CD, NS_D, IF_DC, [f"{CD4}/24", f"{CD6}/64"], [f"{D4}/24", f"{D6}/64"])
        for g in GROUPS:
            if g.octet:
                sh("ip", "-n", NS_C, "route", "add", prefix4(g), "via", S4, "src", C4)
                sh("ip", "-n", NS_C, "-6", "route", "add", f"2001:db8:128:{g.octet}::/64", "via",
                   S6, "src", C6)
        # ICMP port unreachable from the TCP-only host for every probe, not rate-limited.
        for key, val in (("net.ipv4.icmp_ratelimit", "0"), ("net.ipv6.icmp.ratelimit", "0"),
                         ("net.ipv4.icmp_msgs_per_sec", "1000000"),
                         ("net.ipv4.icmp_msgs_burst", "1000000")):
            netns(NS_S, "sysctl", "-qw", f"{key}={val}", check=False)
        netns(NS_S, "nft", "-f", "-", input=_nft_rules())
        self._start_servers()
        self._start_dns()

    def _spawn(self, name, ns, argv):
        """Starts a server or the DNS in `ns` at niceness NICE (qs_support/procs.py)."""
        p = procs.start(ns, argv, os.path.join(self.workdir, f"{name}.log"), nice=NICE,
                        cwd=self.workdir)
        self.procs.append((name, p))
        return p

    def _start_servers(self):
        from qs_support.certs import make_certificate
        certdir = os.path.join(self.workdir, "cert")
        os.makedirs(certdir, exist_ok=True)
        # The prober's names are <d>.scan.test and www.<d>.scan.test: one SAN each would make
        # a certificate too large for a quick handshake, so a wildcard covers the apexes and
        # the www. names are listed for the first domains only (the prober does not verify).
        key, cert, _ = make_certificate(certdir, ("localhost", ZONE, f"*.{ZONE}"))
        htdocs = os.path.join(self.workdir, "htdocs")
        os.makedirs(htdocs, exist_ok=True)
        with open(os.path.join(htdocs, "index.html"), "w") as f:
            f.write("<html><body>quicstep-scan lab population</body></html>\n")
        for g in GROUPS:
            for addr in (f"198.18.128.{g.host}:443", f"[2001:db8:128::{g.host}]:443"):
                fam = "6" if addr.startswith("[") else "4"
                if g.backend == "qs":
                    argv = [self.server_bin, "--listen", addr, "--cert", cert, "--key", key,
                            "--migration", g.migration, "--workers", str(self.workers),
                            "--no-steering", "--htdocs", htdocs, "--idle-timeout-ms", "10000",
                            "--stats-file", os.path.join(self.workdir, f"{g.name}-{fam}.stats.json")]
                    if g.retry:
                        argv.append("--retry")
                    self._spawn(f"{g.name}-{fam}", NS_S, argv)
                elif g.backend == "gtls":
                    host = addr.rsplit(":", 1)[0].strip("[]")
                    self._spawn(f"gtlsserver-{fam}", NS_S,
                                ["gtlsserver", "--quiet", f"--htdocs={htdocs}", "--timeout=10s",
                                 host, "443", key, cert])
                elif g.backend == "tcp":
                    host = addr.rsplit(":", 1)[0].strip("[]")
                    self._spawn(f"tcp-only-{fam}", NS_S, [sys.executable, "-c", (
                        "import socket,sys,time\n"
                        f"s=socket.socket(socket.AF_INET{'6' if fam == '6' else ''})\n"
                        "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                        f"s.bind(('{host}',443)); s.listen(1024)\n"
                        "while True:\n c,_=s.accept(); c.close()\n")])
        # Ready when every UDP server socket is bound (ss in the server namespace).
        want = sum(2 for g in GROUPS if g.backend in ("qs", "gtls"))
        for _ in range(100):
            for name, p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with {p.returncode}: "
                                       + open(os.path.join(self.workdir, f"{name}.log")).read()[-500:])
            out = netns(NS_S, "ss", "-Hlun", "sport", "=", "443").stdout
            if len(out.splitlines()) >= want:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"servers did not bind UDP 443: {out}")

    def _start_dns(self):
        self._spawn("dnsmasq", NS_D, [
            "dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--conf-file=/dev/null",
            "--bind-interfaces", "--user=root", f"--listen-address={D4}",
            f"--listen-address={D6}", "--except-interface=lo", f"--addn-hosts={self.hosts_path}",
            f"--local=/{ZONE}/", "--cache-size=10000", "--dns-forward-max=1000",
            f"--pid-file={os.path.join(self.workdir, 'dnsmasq.pid')}"])
        probe = self.domains[0].name
        for _ in range(50):
            out = netns(NS_C, "dig", "+short", "+time=1", "+tries=1", f"@{D4}", probe, "A",
                        check=False).stdout
            if out.strip():
                return
            time.sleep(0.1)
        raise RuntimeError("dnsmasq does not answer")

    def start_delay_line(self, binary: str, one_way_ms: float, queue: int = 30):
        """Delays every packet between the prober and the servers by one_way_ms in each
        direction: qs_delay_line on nfqueue at the OUTPUT hook of both ends (qs-prb-c
        towards the servers, qs-prb-s1 towards the prober; queued in PREROUTING, a packet
        delivered locally was released at once). DNS is not delayed."""
        for ns, ifc in ((NS_C, IF_CS), (NS_S, IF_SC)):
            name = f"delay_line-{ns}"
            p = self._spawn(name, ns, [binary, "--queue", f"{queue}:{one_way_ms * 1000:.0f}us",
                                       "--max-held", "200000"])
            log = os.path.join(self.workdir, f"{name}.log")
            for _ in range(100):
                if p.poll() is not None:
                    raise RuntimeError("delay line exited: " + open(log).read())
                if "ready" in open(log).read():
                    break
                time.sleep(0.05)
            for tool in ("iptables", "ip6tables"):
                netns(ns, tool, "-w", "-t", "mangle", "-A", "OUTPUT", "-o", ifc, "-j", "NFQUEUE",
                      "--queue-num", str(queue), "--queue-bypass")

    def counters(self, keys=("accepted", "handshakes", "rejected_initial", "retry_sent",
                             "token_valid", "token_replayed", "token_expired", "token_invalid",
                             "token_unknown_key", "path_validated", "path_failed",
                             "policy_ignored")) -> Dict[str, dict]:
        """quicstep-server counters per instance (its --stats-file, summed over workers):
        what a test prints when a class is wrong."""
        out = {}
        for name, _ in self.procs:
            path = os.path.join(self.workdir, f"{name}.stats.json")
            try:
                with open(path) as f:
                    workers = json.load(f).get("workers", [])
            except (OSError, ValueError):
                continue
            out[name] = {k: sum(w.get(k, 0) for w in workers) for k in keys}
        return out

    def stop(self):
        for _, p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 5
        for _, p in self.procs:
            procs.stop(p, signal.SIGTERM, timeout=max(0.1, deadline - time.time()))
        self.procs.clear()
        down()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("up", "down"))
    ap.add_argument("--dir", default="/tmp/qs-prb-population")
    ap.add_argument("--server", help="quicstep-server binary")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--delay-line", help="qs_delay_line binary (with --one-way-ms)")
    ap.add_argument("--one-way-ms", type=float, default=0)
    a = ap.parse_args()
    if a.command == "down":
        down()
        return 0
    pop = Population(a.dir, a.server, a.scale)
    pop.up()
    if a.one_way_ms:
        pop.start_delay_line(a.delay_line, a.one_way_ms)
    print(f"population up: {len(pop.domains)} domains, list {pop.list_path}, DNS {D4};"
          f" Ctrl-C to take it down", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pop.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
