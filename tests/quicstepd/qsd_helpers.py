"""Helpers for the quicstepd lab tests: the daemon, captures, gtlsserver/gtlsclient, and
reading captures with quicstep-inspect. Processes are tracked and ended by PID only."""
import json
import os
import shutil
import subprocess
import time

# What the tests share with the tools (the daemon, captures, processes, certificates) lives
# in qs_support; re-exported here for the quicstepd tests.
from qs_support import binaries, certs
from qs_support.captures import drops as capture_drops  # noqa: F401
from qs_support.captures import inspect, leaks, link_header_len, quic_bytes  # noqa: F401
from qs_support.captures import start as start_capture  # noqa: F401
from qs_support.captures import started as capture_started  # noqa: F401
from qs_support.lab import wait_idle as wait_lab_idle  # noqa: F401
from qs_support.procs import Procs  # noqa: F401
from qs_support.quicstepd import (GUARD_PIN_DIR, LAB_BPFFS, ctl, mount_lab_bpffs,  # noqa: F401
                                  unmount_lab_bpffs, wait_daemon, write_config)
from tests.lab import lab_helpers  # noqa: F401  (qslab, status, in_host, require_root)

REPO = binaries.REPO
QSD = binaries.path("quicstepd")
QSCTL = binaries.path("quicstepctl")
INSPECT = binaries.path("quicstep-inspect")


def make_site(workdir, size_mb):
    htdocs = os.path.join(workdir, "htdocs")
    os.makedirs(htdocs, exist_ok=True)
    with open(os.path.join(htdocs, f"{size_mb}M.bin"), "wb") as f:
        f.write(os.urandom(size_mb * 1000 * 1000))
    key, cert, _ = certs.make_certificate(workdir)
    return htdocs, key, cert


def start_preferred_address_servers(procs, lab, work, htdocs, key, cert):
    """Debian's gtlsserver offering a preferred address (RFC 9000 §9.6), one per family, on
    srv2-a with srv2-b as that address (both in the srv2 namespace). Returns [(address,
    preferred)] for IPv4 and IPv6; the servers are in `procs`, for the caller to stop."""
    from qs_support.shadowsocks import wait_bound
    first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
    srv, pref = lab["servers"][3], lab["servers"][4]  # srv2-a, srv2-b
    assert srv["netns"] == pref["netns"], (srv, pref)
    pairs = [(first(srv["v4"]), first(pref["v4"])), (first(srv["v6"]), first(pref["v6"]))]
    started = []
    for addr, preferred in pairs:
        option = "ipv6" if ":" in addr else "ipv4"
        spelled = f"[{preferred}]" if ":" in preferred else preferred
        p = procs.start(srv["netns"], [
            "gtlsserver", "--quiet", f"--htdocs={htdocs}",
            f"--preferred-{option}-addr={spelled}:443", addr, "443", key, cert],
            os.path.join(work, f"gtlsserver-preferred-{option}.log"))
        started.append(p)
        for bound in (addr, preferred):
            wait_bound(srv["netns"], "u", bound, 443, p)
    return pairs, started


def start_resolver(procs, netns, addresses, upstream, log, records=()):
    """A resolver (dnsmasq) on `addresses` in `netns` that forwards to `upstream` (the lab DNS
    server); `records`: more dnsmasq options (a lie for a name, a TXT record). Returns its
    process once it answers on the first address."""
    from qs_support.procs import wait_for
    argv = ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
            "--conf-file=/dev/null", "--bind-interfaces", "--user=root", "--pid-file=",
            "--except-interface=lo", f"--server={upstream}", "--log-queries=extra",
            "--log-facility=-", *[f"--listen-address={a}" for a in addresses], *records]
    p = procs.start(netns, argv, log)
    answers = lambda: subprocess.run(  # noqa: E731
        ["ip", "netns", "exec", netns, "dig", "+short", "+time=1", "+tries=1",
         f"@{addresses[0]}", "open.test"], capture_output=True, text=True).stdout.strip()
    if not wait_for(lambda: answers() != "", p, seconds=10):
        raise AssertionError(f"dnsmasq in {netns} does not answer (see {log})")
    return p


# A DNS query as systemd-resolved sends one to a link's DNS server: from a socket that names
# the native interface, with IP_UNICAST_IF ("unicast_if": the kernel routes it through that
# interface past the routing rules) or SO_BINDTODEVICE ("bind"), over UDP or TCP. Prints the
# answer's address, or "error: ..." (nothing came, or the send was refused).
BOUND_QUERY = r"""
import socket, struct, sys
server, ifname, mode, proto = sys.argv[1:5]
v6 = ":" in server
fam = socket.AF_INET6 if v6 else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
idx = socket.if_nametoindex(ifname)
if mode == "unicast_if":
    s.setsockopt(socket.IPPROTO_IPV6 if v6 else socket.IPPROTO_IP, 76 if v6 else 50,
                 struct.pack("!I", idx))
else:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
s.settimeout(4)
q = (b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07blocked\x04test\x00"
     + (b"\x00\x1c" if v6 else b"\x00\x01") + b"\x00\x01")
try:
    s.connect((server, 53))
    if proto == "tcp":
        s.sendall(struct.pack("!H", len(q)) + q)
        a = s.recv(2)
        a = s.recv(struct.unpack("!H", a)[0])
    else:
        s.send(q)
        a = s.recv(1500)
    print(socket.inet_ntop(fam, a[-16:] if v6 else a[-4:]))
except OSError as e:
    print("error:", e)
"""


class ResolverLab:
    """DNS through the channel (client/README.md), as a laptop meets it: the ISP's resolver
    (dnsmasq on the client's gateway addresses, v4 and v6) lies for blocked.test, and the
    client's resolv.conf names it; the provider's resolver (dnsmasq on the provider's tunnel
    addresses, what a wg-quick file's DNS line names) tells the truth and holds a TXT record
    of 2 KB, more than the channel's MTU, so its answer crosses the channel in fragments.
    `test` gets cleanups for both resolvers and the resolv.conf. The ISP's resolver also
    knows the provider's WireGuard endpoint by name (PROVIDER_NAME), as a VPN's is public."""
    LIE = ("198.18.200.1", "2001:db8:200::1")
    PROVIDER_NAME = "vpn.provider.test"

    def __init__(self, test, lab, procs, work):
        c, prov = lab["client"], lab["provider"]
        self.lab = lab
        self.isp = (c["native"]["gateway_v4"], c["native"]["gateway_v6"])
        self.resolver = (prov["tunnel_v4"], prov["tunnel_v6"])
        self.truth = lab["dns"]["names"]["blocked.test"]
        self.strings = [f"{i}" + "q" * 249 for i in range(8)]
        upstream = lab["dns"]["v4"]
        for netns, addresses, name, records in (
                (lab["censor"]["netns"], self.isp, "isp",
                 [f"--address=/blocked.test/{a}" for a in self.LIE] +
                 [f"--host-record={self.PROVIDER_NAME},{prov['v4']},{prov['v6']}"]),
                (prov["netns"], self.resolver, "provider",
                 ["--txt-record=big.test," + ",".join(self.strings), "--edns-packet-max=4096"])):
            p = start_resolver(procs, netns, addresses, upstream,
                               os.path.join(work, f"{name}-resolver.log"), records)
            test.addCleanup(procs.stop, p)
        resolv = f"/etc/netns/{c['netns']}/resolv.conf"
        with open(resolv) as f:
            lab_resolv = f.read()

        def restore():
            with open(resolv, "w") as f:
                f.write(lab_resolv)
        test.addCleanup(restore)
        with open(resolv, "w") as f:
            f.write(f"nameserver {self.isp[0]}\nnameserver {self.isp[1]}\n")

    def dig(self, server, *args):
        """dig +short in the client's namespace: the answer's words."""
        return lab_helpers.in_host(self.lab, "client", "dig", "+short", "+time=2", "+tries=2",
                                   f"@{server}", *args, check=False).stdout.split()

    def lookups(self):
        """blocked.test through glibc (getent, the resolv.conf) and dig to the ISP's v4 and v6
        resolver over UDP and TCP; and the TXT record over both families."""
        got = {
            "getent": lab_helpers.in_host(self.lab, "client", "getent", "ahostsv4",
                                          "blocked.test", check=False).stdout.split()[:1],
            "udp v4": self.dig(self.isp[0], "blocked.test", "A"),
            "udp v6": self.dig(self.isp[1], "blocked.test", "AAAA"),
            "tcp v4": self.dig(self.isp[0], "+tcp", "blocked.test", "A"),
            "tcp v6": self.dig(self.isp[1], "+tcp", "blocked.test", "AAAA"),
        }
        big = {fam: "".join(self.dig(self.isp[i], "+bufsize=4096", "+ignore", "big.test", "TXT"))
               for i, fam in enumerate(("v4", "v6"))}
        return got, big

    def bound_lookups(self):
        """blocked.test from sockets that name the client's native interface (BOUND_QUERY):
        IP_UNICAST_IF over UDP (v4, v6) and TCP (v4), SO_BINDTODEVICE over UDP (v4, v6)."""
        native_if = self.lab["client"]["native"]["interface"]
        out = {}
        for name, server, mode, proto in (("unicast_if udp v4", self.isp[0], "unicast_if", "udp"),
                                          ("unicast_if udp v6", self.isp[1], "unicast_if", "udp"),
                                          ("unicast_if tcp v4", self.isp[0], "unicast_if", "tcp"),
                                          ("bind udp v4", self.isp[0], "bind", "udp"),
                                          ("bind udp v6", self.isp[1], "bind", "udp")):
            out[name] = lab_helpers.in_host(self.lab, "client", "python3", "-c", BOUND_QUERY,
                                            server, native_if, mode, proto, check=False,
                                            timeout=30).stdout.strip()
        return out

    def assert_truth(self, test, got, big):
        t = self.truth
        test.assertEqual(got, {"getent": [t["v4"]], "udp v4": [t["v4"]], "udp v6": [t["v6"]],
                               "tcp v4": [t["v4"]], "tcp v6": [t["v6"]]})
        whole = "".join(f'"{s}"' for s in self.strings)
        test.assertEqual(big, {"v4": whole, "v6": whole}, "a fragmented answer came back broken")

    def assert_channel_capture(self, test, cpk, tunnel):
        """At the provider: the client's queries went to the provider's resolver only, and the
        large answer crossed in fragments."""
        asked = {p.get("dst") for p in cpk if p.get("src") in tunnel and p.get("dport") == 53}
        test.assertEqual(asked, set(self.resolver), "queries at the provider went elsewhere")
        test.assertTrue([p for p in cpk if p.get("src") in self.resolver and
                         p.get("dst") in tunnel and p.get("ip_len", 0) > 1000],
                        "the large answer did not cross the channel in fragments")


def add_provider_peer(lab, work, v4, v6):
    """A second client of the lab's provider, as a user's wg-quick file gives one: a new key
    pair, the provider accepting `v4`/32 and `v6`/128 from it. Returns (the peer's private
    key, the provider's public key, a function that removes the peer)."""
    pn, pif = lab["provider"]["netns"], lab["provider"]["wg_interface"]
    private = subprocess.run(["wg", "genkey"], capture_output=True, text=True,
                             check=True).stdout.strip()
    public = subprocess.run(["wg", "pubkey"], input=private + "\n", capture_output=True,
                            text=True, check=True).stdout.strip()
    provider_public = subprocess.run(["ip", "netns", "exec", pn, "wg", "show", pif, "public-key"],
                                     capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["ip", "netns", "exec", pn, "wg", "set", pif, "peer", public, "allowed-ips",
                    f"{v4}/32,{v6}/128"], check=True)

    def remove():
        subprocess.run(["ip", "netns", "exec", pn, "wg", "set", pif, "peer", public, "remove"],
                       check=False)
    return private, provider_public, remove


def wait_channel_working(lab, read_status, seconds=8):
    """An interface channel's health comes from its device's counters: `working` in a second
    in which answers came, `idle` in a quiet one (no handshake time keeps it working, as
    WireGuard's does). Lookups through the channel until a reading sees them answered, for
    `seconds` at most; returns the last status (read_status())."""
    deadline = time.time() + seconds
    while True:
        lab_helpers.in_host(lab, "client", "dig", "+short", "+tries=1", "+time=2", "open.test",
                            check=False)
        st = read_status()
        if st["channel"]["health"] == "working" or time.time() > deadline:
            return st
        time.sleep(0.3)


def kernel_state(netns):
    """What quicstepd may have installed: nft table, iptables rules (tagged with the comment
    quicstepd; user chains QUICSTEP_* in earlier versions), ip rules."""
    def run(*cmd):
        return subprocess.run(["ip", "netns", "exec", netns, *cmd], capture_output=True,
                              text=True).stdout
    tables = run("nft", "list", "tables")
    ip_rules = run("ip", "-4", "rule") + run("ip", "-6", "rule")
    return {
        "nft": "table inet quicstep" in tables or "table netdev quicstep" in tables,
        "iptables": any(tag in run(tool, "-t", "raw", "-S")
                        for tool in ("iptables-nft", "ip6tables-nft")
                        for tag in ("QUICSTEP", "--comment quicstepd ")),
        # The queue path's mark rules, the routed path's (its channel table, its flows).
        "rules": "fwmark 0x5" in ip_rules or "lookup 51821" in ip_rules
                 or any(f"{p}:" in ip_rules for p in range(10120, 10131)),
    }


def guard_pinned():
    """Whether the routed native path's guard is pinned (its maps and links)."""
    return os.path.isdir(GUARD_PIN_DIR) and bool(os.listdir(GUARD_PIN_DIR))


def flow_rules(netns):
    """The routed native path's flows moved native: the elements of its sets routed4/6
    (server . client port . server port), as `to SERVER sport P dport Q` lines."""
    lines = []
    for name in ("routed4", "routed6"):
        out = subprocess.run(["ip", "netns", "exec", netns, "nft", "-j", "list", "set", "inet",
                              "quicstep", name], capture_output=True, text=True).stdout
        for item in json.loads(out or '{"nftables": []}')["nftables"]:
            for elem in item.get("set", {}).get("elem", []):
                server, sport, dport = elem["concat"]
                lines.append(f"to {server} sport {sport} dport {dport}")
    return lines


def native_set_has(netns, server, port=443):
    """Whether the daemon's kernel fast path holds a flow to server:port (the native set
    of the server's family, written by the daemon over netlink)."""
    name = "native6" if ":" in server else "native4"
    out = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "set", "inet", "quicstep",
                          name], capture_output=True, text=True).stdout
    return f". {server} . {port}" in out


def watched_ports(netns):
    """The client ports in the daemon's watchports set (the watch set's gate): those of flows
    the watchdog still waits on."""
    out = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "set", "inet", "quicstep",
                          "watchports"], capture_output=True, text=True).stdout
    if "elements = {" not in out:
        return set()
    body = out.split("elements = {", 1)[1].split("}", 1)[0]
    return {int(p) for p in body.replace(",", " ").split()}


def native_packets_by_rule(netns):
    """The kernel's native-path packet counts (rules commented native_out): (in the bulk
    rule at the head of out_decide, in quic_out's rules). A decided flow's short headers
    should take the bulk rule but for the ~1 in 256 that refresh the set element."""
    def counted(chain):
        out = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "chain", "inet",
                              "quicstep", chain], capture_output=True, text=True).stdout
        return sum(int(line.split("counter packets")[1].split()[0]) for line in out.splitlines()
                   if 'comment "native_out"' in line and "counter packets" in line)
    return counted("out_decide"), counted("quic_out")


def cleanup_dir(path):
    shutil.rmtree(path, ignore_errors=True)


# A LAN host behind the client, for the tests of a router's LAN (deleted by name).
LAN_NS = "qs-lan"
LAN_V4, LAN_V6 = "198.18.200.2", "2001:db8:200::2"


def lan_host(test, client_ns, uplink):
    """A LAN host behind the client, which then forwards and masquerades the LAN on its
    native link `uplink`, as a home router does: namespace LAN_NS on a veth to the client,
    198.18.200.0/24 and 2001:db8:200::/64. Removed (namespace, NAT table, forwarding off) by
    the test's cleanup."""
    def run(netns, *cmd):
        subprocess.run(["ip", "netns", "exec", netns, *cmd], check=True, timeout=10)

    def remove():
        subprocess.run(["ip", "netns", "del", LAN_NS], capture_output=True)
        subprocess.run(["ip", "netns", "exec", client_ns, "nft", "delete", "table", "inet",
                        "qsd_test_lan"], capture_output=True)
        subprocess.run(["ip", "netns", "exec", client_ns, "sysctl", "-qw",
                        "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"],
                       capture_output=True)
    remove()  # left by an interrupted run
    test.addCleanup(remove)
    subprocess.run(["ip", "netns", "add", LAN_NS], check=True)
    run(client_ns, "ip", "link", "add", "to-lan", "type", "veth", "peer", "name", "lan0",
        "netns", LAN_NS)
    for netns, dev, v4, v6 in ((client_ns, "to-lan", "198.18.200.1", "2001:db8:200::1"),
                               (LAN_NS, "lan0", LAN_V4, LAN_V6)):
        run(netns, "ip", "addr", "add", f"{v4}/24", "dev", dev)
        run(netns, "ip", "-6", "addr", "add", f"{v6}/64", "dev", dev, "nodad")
        run(netns, "ip", "link", "set", dev, "up")
    run(LAN_NS, "ip", "link", "set", "lo", "up")
    run(LAN_NS, "ip", "route", "add", "default", "via", "198.18.200.1")
    run(LAN_NS, "ip", "-6", "route", "add", "default", "via", "2001:db8:200::1")
    run(client_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
    nat = ("table inet qsd_test_lan {\n chain post {\n"
           "  type nat hook postrouting priority srcnat; policy accept;\n"
           f'  oifname "{uplink}" ip saddr 198.18.200.0/24 masquerade\n'
           f'  oifname "{uplink}" ip6 saddr 2001:db8:200::/64 masquerade\n }}\n}}\n')
    subprocess.run(["ip", "netns", "exec", client_ns, "nft", "-f", "-"], input=nat, text=True,
                   check=True)
