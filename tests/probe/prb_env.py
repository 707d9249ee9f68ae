"""Throwaway namespaces for the quicstep-probe lab test (names and addresses reserved for it).

Topology:
  qs-prb1-c  qsp1-c  198.18.140.2/.3, 2001:db8:140::2/::3  (two addresses: address migration)
      |  veth
  qs-prb1-s  qsp1-s  one address per server under test, see SERVERS
Everything is removed by name in down(); processes are ended by PID.
"""
import os
import time

from qs_support import artifacts, caddy, certs, procs
from qs_support.netns import sh, netns, remove_namespaces, create_veth_pair  # noqa: F401

NS_S, NS_C = "qs-prb1-s", "qs-prb1-c"
IF_S, IF_C = "qsp1-s", "qsp1-c"
C4 = ("198.18.140.2", "198.18.140.3")
C6 = ("2001:db8:140::2", "2001:db8:140::3")
DNS4 = "198.18.140.53"

# name -> (IPv4, IPv6 or None, what serves it)
SERVERS = {
    "full.test": ("198.18.140.10", "2001:db8:140::10", "quicstep-server --migration full"),
    "portonly.test": ("198.18.140.11", None, "quicstep-server --migration port-only"),
    "none.test": ("198.18.140.12", None, "quicstep-server --migration none"),
    "stale.test": ("198.18.140.13", None, "quicstep-server --migration stale-path"),
    "retry.test": ("198.18.140.14", None, "quicstep-server --migration full --retry"),
    "gtls.test": ("198.18.140.15", None, "gtlsserver (Debian ngtcp2-server)"),
    "tcponly.test": ("198.18.140.16", None, "a TCP listener, no UDP"),
    "silent.test": ("198.18.140.17", None, "UDP dropped (iptables)"),
    "caddy.test": ("198.18.140.18", None, "Caddy (Debian's caddy 2.6; quic-go 0.29)"),
}


def down():
    remove_namespaces(NS_S, NS_C)


def up():
    down()
    server4 = [v[0] for v in SERVERS.values()] + [DNS4]
    server6 = [v[1] for v in SERVERS.values() if v[1]]
    create_veth_pair(NS_S, IF_S, (server4, server6), NS_C, IF_C, (C4, C6))
    # The first path leaves from the first client address; the second is for migration.
    sh("ip", "-n", NS_C, "route", "replace", "198.18.140.0/24", "dev", IF_C, "src", C4[0])
    sh("ip", "-n", NS_C, "-6", "route", "replace", "2001:db8:140::/64", "dev", IF_C, "src", C6[0])
    # ICMP errors unlimited, so every probe of the TCP-only host sees its port unreachable.
    netns(NS_S, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=0")
    netns(NS_S, "iptables", "-A", "INPUT", "-p", "udp", "-d", SERVERS["silent.test"][0],
          "-j", "DROP")


def make_cert(workdir):
    """A throwaway certificate for every server name and its www.: returns (cert, key)."""
    names = [x for n in SERVERS for x in (n, f"www.{n}")]
    key, cert, _ = certs.make_certificate(workdir, names=names, cn="probe.test")
    return cert, key


class Processes:
    """Server-side processes started in NS_S (logs as <name>.log in the work directory),
    stopped together by PID (qs_support/procs.py)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.procs = procs.Procs()
        self.names = {}

    def start(self, name, *cmd):
        p = self.procs.start(NS_S, list(cmd), os.path.join(self.workdir, f"{name}.log"))
        self.names[p] = name
        return p

    def check_alive(self):
        for p in self.procs.procs:
            if p.poll() is not None:
                raise RuntimeError(f"{self.names[p]} exited with {p.returncode}")

    def stop(self):
        self.procs.stop_all()


def start_servers(procs, server_bin, cert, key):
    common = ["--cert", cert, "--key", key, "--idle-timeout-ms", "5000", "--duration", "200",
              "--workers", "1"]
    v4, v6, _ = SERVERS["full.test"]
    procs.start("full", server_bin, "--listen", f"{v4}:443", "--migration", "full", *common)
    procs.start("full6", server_bin, "--listen", f"[{v6}]:443", "--migration", "full", *common)
    for name, mode in (("portonly.test", "port-only"), ("none.test", "none"),
                       ("stale.test", "stale-path")):
        procs.start(name, server_bin, "--listen", f"{SERVERS[name][0]}:443",
                    "--migration", mode, *common)
    procs.start("retry", server_bin, "--listen", f"{SERVERS['retry.test'][0]}:443",
                "--migration", "full", "--retry", *common)
    procs.start("gtls", "gtlsserver", "-q", SERVERS["gtls.test"][0], "443", key, cert)
    htdocs = os.path.join(procs.workdir, "htdocs")
    os.makedirs(htdocs, exist_ok=True)
    with open(os.path.join(htdocs, "index.html"), "w") as f:
        f.write("<html><body>caddy.test</body></html>\n")
    p = caddy.start(procs.procs, NS_S, [SERVERS["caddy.test"][0]], htdocs, key, cert,
                    procs.workdir)
    procs.names[p] = "caddy"
    procs.start("tcponly", "python3", "-c",
                "import socket,time\n"
                "s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                f"s.bind(('{SERVERS['tcponly.test'][0]}',443));s.listen()\n"
                "time.sleep(200)")
    procs.start("dns", "dnsmasq", "-k", "--no-resolv", "--no-hosts", "--bind-interfaces",
                f"--listen-address={DNS4}", "--port=53", "--log-facility=-",
                "--pid-file=", "--user=root",
                *(f"--address=/{n}/{v[0]}" for n, v in SERVERS.items()),
                f"--address=/full.test/{SERVERS['full.test'][1]}")
    time.sleep(0.5)
    procs.check_alive()


def static_hosts(workdir):
    path = os.path.join(workdir, "hosts.txt")
    with open(path, "w") as f:
        for name, (v4, v6, _) in SERVERS.items():
            f.write(f"{name} {v4}{' ' + v6 if v6 else ''}\n")
    return path


def tempdir():
    """A work directory (under QS_TEST_ARTIFACTS when a test runs: qs_support/artifacts.py)."""
    return artifacts.work_dir("qs-prb1-")
