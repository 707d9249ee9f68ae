"""quicstepd in the lab (root): an unmodified QUIC client (Debian's gtlsclient) fetches a
10 MB file over HTTP/3 from Debian's gtlsserver through quicstepd. Proven from captures:
on the censor's client-facing interface (the native link) no DNS, no TCP, no QUIC long
header from the client, and >= 95% of the connection's bytes; at the provider's WireGuard
interface the handshake, and as many channel bytes as quicstepctl reports (2%). Then kill -9
mid-transfer (no leak; new connections go through the channel), --cleanup, restart, a bad
config (exit 2, nothing installed), IPv6 end to end."""
import os
import re
import signal
import subprocess
import time
import unittest

from qs_support import artifacts, caddy, captures, certs, chromium, firefox
from qs_support import quicstepd as qs_quicstepd
from qs_support import unit_caps
from qs_support.shadowsocks import wait_bound
from tests.lab import lab_helpers
from tests.quicstepd import qsd_helpers as h

SIZE_MB = 10
# The suite runs on the daemon's default native path (routed for stateless addressing; the
# queue path's own kernel state — native set, bulk rule, queues — is then checked by its
# routed counterpart) and again with QSD_NATIVE_PATH=queue. QSD_ADDRESSING=nat runs it on
# the queue path, the only one nat has.
ROUTED = (os.environ.get("QSD_NATIVE_PATH") != "queue"
          and os.environ.get("QSD_ADDRESSING", "stateless") == "stateless")


# test_21's sender (client) and sink (server): UDP GSO batches to port 443 of the two
# addresses, from an unconnected and a connected socket each; the sink prints the size of
# every datagram it got, once stopped.
GSO_SENDER = """
import os, socket, sys
UDP_SEGMENT = 103
def long_header():
    return bytes([0xc3, 0, 0, 0, 1, 8]) + os.urandom(8) + bytes([0]) + os.urandom(1252 - 15)
def short_header():
    return bytes([0x40]) + os.urandom(59)
for dst in sys.argv[1:]:
    family = socket.AF_INET6 if ":" in dst else socket.AF_INET
    for connected in (False, True):
        s = socket.socket(family, socket.SOCK_DGRAM)
        if connected:
            s.connect((dst, 443))
        for size, batch in ((1252, long_header() + long_header()),
                            (60, short_header() + short_header() + short_header())):
            cmsg = [(socket.SOL_UDP, UDP_SEGMENT, size.to_bytes(2, "little"))]
            if connected:
                s.sendmsg([batch], cmsg)
            else:
                s.sendmsg([batch], cmsg, 0, (dst, 443))
        s.close()
"""
# test_y's sender: long-header-like datagrams to port 443 of each address given, about
# 4,000 a second each, until stopped; prints how many it sent. (200 octets: the server
# ignores an Initial shorter than 1,200.)
LONG_HEADER_FLOOD = """
import os, signal, socket, sys, time
sent = 0
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
socks = []
for dst in sys.argv[1:]:
    s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_DGRAM)
    for attempt in range(100):  # a lab just up: the native IPv6 address may be tentative
        try:
            s.connect((dst, 443))
            break
        except OSError:
            time.sleep(0.1)
    socks.append(s)
print("connected", flush=True)
payload = bytes([0xc3, 0, 0, 0, 1, 8]) + os.urandom(8) + bytes([0]) + os.urandom(185)
while not stop:
    for s in socks:
        for _ in range(4):
            try:
                s.send(payload)
                sent += 1
            except OSError:
                pass
    time.sleep(0.001)
print(sent, flush=True)
"""
# test_y2's sender: a TCP connection attempt (one SYN) to port 443 of each address given,
# about 1,000 a second each, until stopped.
TCP_CONNECTS = """
import signal, socket, sys, time
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
while not stop:
    for dst in sys.argv[1:]:
        s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((dst, 443))
        except OSError:
            pass
        s.close()
    time.sleep(0.001)
"""
GSO_SINK = """
import select, signal, socket, sys
socks = []
for a in sys.argv[1:]:
    s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a, 443))
    socks.append(s)
sizes = []
signal.signal(signal.SIGINT, lambda *_: (print(*sizes), sys.exit(0)))
while True:
    for s in select.select(socks, [], [])[0]:
        sizes.append(len(s.recv(65536)))
"""


def udp_counters(netns):
    """The UDP checksum error counters of a namespace (nstat, absolute)."""
    out = subprocess.run(["ip", "netns", "exec", netns, "nstat", "-asz", "UdpInCsumErrors",
                          "Udp6InCsumErrors"], capture_output=True, text=True).stdout
    found = {k: 0 for k in ("UdpInCsumErrors", "Udp6InCsumErrors")}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] in found:
            found[parts[0]] = int(parts[1])
    return found


class QuicstepdLab(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        h.wait_lab_idle()
        lab_helpers.qslab("up", timeout=180)
        cls.lab = lab_helpers.status()
        cls.work = artifacts.work_dir("qsd-lab-")
        os.chmod(cls.work, 0o755)
        cls.procs = h.Procs()
        try:
            cls._start_server()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _start_server(cls):
        c = cls.lab["client"]
        cls.client_ns = c["netns"]
        cls.channel_if = c["channel"]["interface"]
        cls.client_native = set(c["native"]["v4"] + c["native"]["v6"])
        cls.tunnel_addrs = {c["channel"]["v4"], c["channel"]["v6"]}
        cls.censor_ns = cls.lab["censor"]["netns"]
        cls.censor_if = cls.lab["censor"]["client_interface"]
        cls.prov_ns = cls.lab["provider"]["netns"]
        cls.prov_if = cls.lab["provider"]["wg_interface"]
        srv = cls.lab["servers"][0]
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        cls.srv_ns, cls.srv_v4, cls.srv_v6 = srv["netns"], first(srv["v4"]), first(srv["v6"])
        assert cls.srv_v4.startswith("198.1") and cls.srv_v6.startswith("2001:db8:"), srv
        htdocs, key, cert = h.make_site(cls.work, SIZE_MB)
        cls.server = cls.procs.start(cls.srv_ns, ["gtlsserver", "--quiet", f"--htdocs={htdocs}",
                                                  "*", "443", key, cert],
                                     os.path.join(cls.work, "gtlsserver.log"))
        time.sleep(0.5)
        if cls.server.poll() is not None:
            raise AssertionError("gtlsserver did not start")
        cls.sock = os.path.join(cls.work, "control.sock")
        cls.config = h.write_config(os.path.join(cls.work, "quicstepd.toml"), cls.channel_if)

    @classmethod
    def tearDownClass(cls):
        cls.procs.stop_all()
        subprocess.run(["ip", "netns", "exec", cls.lab["client"]["netns"], h.QSD, "--cleanup",
                        "--config", os.path.join(cls.work, "quicstepd.toml")],
                       capture_output=True, timeout=30)
        if ROUTED:
            h.unmount_lab_bpffs()
        lab_helpers.down(cls.any_failed)
        if cls.any_failed or os.environ.get("QSD_KEEP"):
            artifacts.finish(cls.work, True)
        else:
            h.cleanup_dir(cls.work)

    # --- helpers -------------------------------------------------------------------------
    def start_daemon(self, config=None):
        p = self.procs.start(self.client_ns, [h.QSD, "--config", config or self.config,
                                              "--control", self.sock, "--log-level", "debug"],
                             os.path.join(self.work, f"quicstepd-{time.time():.3f}.log"))
        self.addCleanup(self.procs.stop, p)
        h.wait_daemon(self.client_ns, self.sock, p)
        return p

    def fetch_cmd(self, dest, out_dir):
        os.makedirs(out_dir, exist_ok=True)
        return ["timeout", "-k", "5", "90", "gtlsclient", "--quiet", "--exit-on-all-streams-close",
                f"--download={out_dir}", "--timeout=15s", dest, "443",
                f"https://open.test/{SIZE_MB}M.bin"]

    def fetch(self, dest, name):
        out_dir = os.path.join(self.work, name)
        t0 = time.time()
        res = lab_helpers.in_host(self.lab, "client", *self.fetch_cmd(dest, out_dir),
                                  check=False, timeout=120)
        took = time.time() - t0
        self.assert_downloaded(out_dir, res)
        return took

    def assert_downloaded(self, out_dir, res=None):
        path = os.path.join(out_dir, f"{SIZE_MB}M.bin")
        size = os.path.getsize(path) if os.path.exists(path) else 0
        self.assertEqual(size, SIZE_MB * 1000 * 1000,
                         f"download incomplete ({size} bytes): {res.stderr[-2000:] if res else ''}")

    def status(self):
        import json
        return json.loads(h.ctl(self.client_ns, self.sock, "status", "--json").stdout)

    def captures(self, name):
        native = os.path.join(self.work, f"{name}-native.pcap")
        channel = os.path.join(self.work, f"{name}-provider.pcap")
        return (h.start_capture(self.procs, self.censor_ns, self.censor_if, native), native,
                h.start_capture(self.procs, self.prov_ns, self.prov_if, channel), channel)

    def stop_captures(self, *procs):
        time.sleep(1.5)  # the capture ring hands over a block at least every second
        for p in procs:
            self.procs.stop(p)

    def assert_complete(self, *pcaps):
        """A capture that lost packets proves nothing: tcpdump must have dropped none."""
        for path in pcaps:
            self.assertEqual(h.capture_drops(path), 0, f"{path}: tcpdump dropped packets")

    def channel_bytes_at_provider(self, cpk):
        """IP bytes from the tunnel addresses at the provider: (without multicast, all).

        The kernel's own link-scope multicast on the channel device (MLD reports sent as the
        device comes up and repeated up to a second later, rewritten to the tunnel address)
        is counted by the daemon only when it left after the daemon's counters were in place:
        CI and fresh-clone runs saw one 96-byte report counted and not counted, on the queue
        path and on the routed path. So the daemon's figure must lie between the two."""
        unicast = captures.unicast_bytes_from(cpk, self.tunnel_addrs)
        everything = sum(p["ip_len"] for p in cpk if p.get("src") in self.tunnel_addrs)
        return unicast, everything

    def assert_channel_bytes(self, reported, at_provider):
        """Every byte the flows sent into the channel is counted, and nothing the provider
        did not receive: 2% of room either way (a router solicitation between the status
        read and the capture's end)."""
        unicast, everything = at_provider
        self.assertGreaterEqual(reported, 0.98 * unicast, "channel bytes missing from the count")
        self.assertLessEqual(reported, 1.02 * everything, "channel bytes counted twice")

    def read_captures(self, native, channel):
        """Both captures, complete, decoded; the native one checked for leaks."""
        self.assert_complete(native, channel)
        npk, cpk = h.inspect(native), h.inspect(channel)
        self.assert_no_leak(npk)
        return npk, cpk

    @staticmethod
    def native_share(npk, cpk, *servers):
        """QUIC bytes of the connections to `servers` on each capture, and the native share."""
        nat_b = sum(h.quic_bytes(npk, s) for s in servers)
        ch_b = sum(h.quic_bytes(cpk, s) for s in servers)
        return nat_b, ch_b, nat_b / max(1, nat_b + ch_b)

    def assert_no_leak(self, native_pkts):
        bad = h.leaks(native_pkts, self.client_native | self.tunnel_addrs)
        self.assertEqual(bad[:5], [], f"{len(bad)} leaked packets on the native link")

    def assert_clean_exit(self, daemon):
        """SIGINT: the daemon exits 0 and leaves nothing installed (rules, routes, guard)."""
        self.assertEqual(self.procs.stop(daemon, timeout=15), 0)
        self.assertEqual(h.kernel_state(self.client_ns),
                         {"nft": False, "iptables": False, "rules": False})
        self.assertFalse(h.guard_pinned(), "the guard outlived a clean exit")

    # --- tests ---------------------------------------------------------------------------
    def assert_flow_moved(self, server, label):
        """The moved flow reached the kernel's fast path: the native set and its bulk rule
        (queue path), or a flow rule of its own (routed path)."""
        if ROUTED:
            # The fetch is over: the flow had its rule while its socket lived, and lost it
            # when the client closed the socket (the kernel announces that; without it the
            # rule would wait for the idle timeout, 120 s, and stall a new connection reusing
            # the port to this server: the guard drops its Initial).
            rules = h.flow_rules(self.client_ns)
            deadline = time.time() + 3
            while any(f"to {server} " in r for r in rules) and time.time() < deadline:
                time.sleep(0.1)
                rules = h.flow_rules(self.client_ns)
            routed = self.status()["routed"]
            print(f"\n[{label}] routed {routed}")
            self.assertGreaterEqual(routed["rules_added"], 1, "the flow never got its rule")
            self.assertFalse(any(f"to {server} " in r for r in rules),
                             f"the rule outlived the client's socket: {rules}")
            self.assertGreaterEqual(routed["sockets_closed"], 1)
            self.assertGreaterEqual(self.status()["flows"]["closed"], 1)
            return
        fam = "native6" if ":" in server else "native4"
        self.assertTrue(h.native_set_has(self.client_ns, server), f"flow not in {fam}")
        self.assert_bulk_rule_carries_native(label)

    def assert_bulk_rule_carries_native(self, label):
        """The kernel's bulk rule (the head of out_decide) took the decided flow's packets:
        all but the ~1 in 256 whose sample byte sends them to quic_out to refresh the element.
        Without it they would all still go native, through quic_out, at a higher cost each."""
        bulk, slow = h.native_packets_by_rule(self.client_ns)
        print(f"\n[{label}] native packets: bulk rule {bulk}, quic_out {slow}")
        self.assertGreaterEqual(bulk, 0.95 * (bulk + slow))
        # No check that some refreshed the element: a lab fetch sends ~750 native packets,
        # and with none of them sampled one time in 20 ((255/256)^750) such a check would
        # fail by chance. bench_rule_cost.py checks that some do (its sample byte cycles).

    def test_1_bad_config_exit_2_nothing_installed(self):
        bad = os.path.join(self.work, "bad.toml")
        with open(bad, "w") as f:
            f.write('[daemon]\nchannel_interface = "qsw-client"\nmark_channel = "fifty"\n')
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--config", bad, "--control",
                                  self.sock, check=False)
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn(f"{bad}:3", res.stderr)
        self.assertEqual(h.kernel_state(self.client_ns),
                         {"nft": False, "iptables": False, "rules": False})

    def test_2_fetch_v4_handshake_via_channel_data_native(self):
        cn, native, cp, channel = self.captures("v4")
        d = self.start_daemon()
        took = self.fetch(self.srv_v4, "v4")
        # DNS through the daemon's rules: a lookup must reach the channel, not the censor.
        lab_helpers.in_host(self.lab, "client", "dig", "+short", "+tries=1", "+time=3",
                            "open.test", check=False)
        st = self.status()
        # The confirmed flow reached the kernel's fast path (a netlink set update).
        self.assert_flow_moved(self.srv_v4, "v4")
        if ROUTED:
            self.assertEqual(st["routed"]["rule_failures"], 0)
            self.assertTrue(h.guard_pinned(), "the guard is not pinned")
            human = h.ctl(self.client_ns, self.sock, "status").stdout
            self.assertIn(f"routed native path: {st['routed']['flows_with_rule']} flow rules",
                          human)
            watched_after_fetch = set() if st["routed"]["flows_watched"] == 0 else {"routed"}
        else:
            self.assertGreaterEqual(st["daemon"]["set_updates"], 1)
            self.assertEqual(st["daemon"]["set_update_failures"], 0)
            watched_after_fetch = h.watched_ports(self.client_ns)
        self.stop_captures(cn, cp)
        self.assert_clean_exit(d)
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        if ROUTED:
            # The guard counted the native path (IP bytes, both ways): the capture's packets.
            counted = st["kernel"]["native_out"]["bytes"] + st["kernel"]["native_in"]["bytes"]
            print(f"\n[v4 routed] native bytes counted by the guard {counted}, captured {nat_b}; "
                  f"routed {st['routed']}")
            self.assertLessEqual(abs(counted - nat_b), 0.02 * nat_b)
        # The handshake went through the channel: the client's Initial, seen at the provider.
        initials = [p for p in cpk if p.get("dst") == self.srv_v4 and any(
            q.get("type") == "initial" for q in p.get("quic", []))]
        self.assertTrue(initials, "no Initial at the provider")
        self.assertTrue(all(p["src"] in self.tunnel_addrs for p in initials),
                        "channel packets must carry the tunnel address (nat mode)")
        self.assertTrue(any(p.get("dns") for p in cpk), "the DNS lookup did not use the channel")
        reported = st["paths"]["channel"]["bytes"]
        at_provider = self.channel_bytes_at_provider(cpk)
        print(f"\n[v4] {took:.2f}s, native share {share:.4f} ({nat_b} native / {ch_b} channel "
              f"bytes); channel bytes reported {reported}, at provider {at_provider}; "
              f"watchdog {st['watchdog']}")
        self.assertGreaterEqual(share, 0.95)
        self.assert_channel_bytes(reported, at_provider)
        self.assertGreaterEqual(st["watchdog"]["moved_native"], 1)
        # Confirmed by the server's first native answers, queued from the watch chain (behind
        # the watched-port gate, which the confirmation emptied again).
        self.assertGreaterEqual(st["watchdog"]["confirmed"], 1)
        self.assertEqual(watched_after_fetch, set())

    def test_3_kill9_mid_transfer_cleanup_restart(self):
        cn, native, cp, channel = self.captures("kill")
        d = self.start_daemon()
        out_dir = os.path.join(self.work, "kill")
        client = self.procs.start(self.client_ns, self.fetch_cmd(self.srv_v4, out_dir),
                                  os.path.join(self.work, "kill-client.log"))
        # Kill once the connection has moved native (the data is flowing).
        deadline = time.time() + 20
        while time.time() < deadline and self.status()["paths"]["native"]["packets"] < 50:
            time.sleep(0.02)
        mid = client.poll() is None
        self.procs.stop(d, sig=9)
        client.wait(100)
        self.assert_downloaded(out_dir)
        if ROUTED:  # the dead daemon's rules and guard stay
            self.assertTrue(h.guard_pinned(), "the guard went with the daemon")
            self.assertTrue(h.kernel_state(self.client_ns)["rules"])
        # New connections after the kill: no daemon, the rules stay -> all via the channel.
        self.stop_captures(cn)
        cn2, native2 = (h.start_capture(self.procs, self.censor_ns, self.censor_if,
                                        os.path.join(self.work, "after-kill.pcap")),
                        os.path.join(self.work, "after-kill.pcap"))
        took = self.fetch(self.srv_v4, "after-kill")
        self.stop_captures(cn2, cp)
        self.assert_complete(native, native2)
        npk, npk2, cpk = h.inspect(native), h.inspect(native2), h.inspect(channel)
        self.assert_no_leak(npk)
        self.assert_no_leak(npk2)
        self.assertEqual(h.quic_bytes(npk2, self.srv_v4), 0,
                         "a connection made while the daemon was dead went native")
        print(f"\n[kill -9] killed mid-transfer: {mid}; in-flight fetch completed; a new "
              f"10 MB fetch with the daemon dead took {took:.2f}s, all through the channel "
              f"({h.quic_bytes(cpk, self.srv_v4)} channel bytes in total)")
        self.assertTrue(mid, "the transfer ended before the kill: no mid-transfer check")
        # --cleanup removes everything; a restart works again.
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--cleanup", "--config",
                                  self.config, check=False)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(h.kernel_state(self.client_ns),
                         {"nft": False, "iptables": False, "rules": False})
        self.assertFalse(h.guard_pinned(), "--cleanup left the guard")
        d = self.start_daemon()
        self.fetch(self.srv_v4, "restart")
        # The restarted daemon moved the new connection native: the download came natively.
        self.assertGreaterEqual(self.status()["kernel"]["native_in"]["bytes"], SIZE_MB * 900_000)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)

    def test_3c_queue_path_after_a_killed_routed_daemon(self):
        """A routed daemon killed with -9 leaves its guard pinned; a queue-path daemon
        started after it without --cleanup (by hand: the systemd unit cleans up first)
        takes the guard off, since the guard's channel program would go on with the dead
        daemon's tunnel addresses; its own rules keep the native path clean."""
        pins = h.mount_lab_bpffs()
        routed = h.write_config(os.path.join(self.work, "routed-then-queue.toml"),
                                self.channel_if, addressing="stateless", native_path="routed")
        d = self.start_daemon(routed)
        self.fetch(self.srv_v4, "routed-before-kill")
        self.procs.stop(d, sig=9)
        self.assertTrue(h.guard_pinned(), "the killed routed daemon's guard is not pinned")
        queue = h.write_config(os.path.join(self.work, "queue-after-routed.toml"),
                               self.channel_if, addressing="stateless", native_path="queue",
                               extra=f'guard_pin_dir = "{pins}"\n')
        cn, native, cp, channel = self.captures("queue-after-routed")
        d = self.start_daemon(queue)
        self.assertFalse(h.guard_pinned(), "the queue path left the dead daemon's guard")
        self.assertEqual(self.status()["native_path"], "queue")
        self.fetch(self.srv_v4, "queue-after-routed")
        self.fetch(self.srv_v6, "queue-after-routed-v6")
        self.stop_captures(cn, cp)
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4, self.srv_v6)
        print(f"\n[queue after a killed routed daemon] guard taken off; native share {share:.4f}")
        self.assertGreater(share, 0.95)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--cleanup", "--config", routed,
                                  check=False)
        self.assertEqual(res.returncode, 0, res.stderr)

    def test_4_fetch_v6(self):
        cn, native, cp, channel = self.captures("v6")
        d = self.start_daemon()
        took = self.fetch(self.srv_v6, "v6")
        self.assert_flow_moved(self.srv_v6, "v6")
        # SIGHUP with the same config: the classifier keeps its flows (and the kernel its
        # table: the same ruleset is not reinstalled).
        if ROUTED:
            # The fetch's flow went with its socket: a socket that stays open, with one
            # Initial-like datagram to the server (through the channel), is a flow to keep.
            holder = self.procs.start(self.client_ns, [
                "python3", "-c",
                "import socket,time\n"
                "s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)\n"
                f"s.connect(('{self.srv_v6}',443))\n"
                "s.send(bytes([0xc0,0,0,0,1,8])+bytes(8)+bytes([0])+bytes(1185))\n"
                "time.sleep(60)\n"], os.path.join(self.work, "holder.log"))
            self.addCleanup(self.procs.stop, holder)
            deadline = time.time() + 5
            while self.status()["flows"]["tracked"] < 1 and time.time() < deadline:
                time.sleep(0.05)
        before = self.status()
        os.kill(d.pid, signal.SIGHUP)
        deadline = time.time() + 10
        while self.status()["daemon"]["reloads"] == before["daemon"]["reloads"]:
            self.assertLess(time.time(), deadline, "SIGHUP not handled")
            time.sleep(0.1)
        after = self.status()
        self.assertGreaterEqual(before["flows"]["tracked"], 1)
        self.assertEqual(after["flows"]["tracked"], before["flows"]["tracked"])
        self.assertEqual(after["flows"]["created"], before["flows"]["created"])
        self.assertGreaterEqual(after["paths"]["native"]["bytes"],
                                before["paths"]["native"]["bytes"])
        self.stop_captures(cn, cp)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v6)
        print(f"\n[v6] {took:.2f}s, native share {share:.4f} ({nat_b} / {ch_b})")
        self.assertGreaterEqual(share, 0.95)

    def server_ignores_native_addresses(self):
        """The server drops every QUIC packet from the client's native IPv4 addresses (a
        server that ignores a new address), until the test ends."""
        addrs = ", ".join(a for a in self.client_native if ":" not in a)
        rules = ("table inet qsd_test_ignore {\n chain in {\n"
                 "  type filter hook input priority 0; policy accept;\n"
                 f"  ip saddr {{ {addrs} }} udp dport 443 drop\n }}\n}}\n")
        subprocess.run(["ip", "netns", "exec", self.srv_ns, "nft", "-f", "-"], input=rules,
                       text=True, check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "exec", self.srv_ns, "nft", "delete",
                                         "table", "inet", "qsd_test_ignore"], check=False)

    def test_5_server_ignores_new_address_watchdog_falls_back(self):
        # The server drops everything from the client's native addresses: a server that
        # ignores packets from a new address. The watchdog must bring the flow back to the
        # channel, the fetch must complete, and the destination must stay on the channel.
        self.server_ignores_native_addresses()
        cn, native, cp, channel = self.captures("ignore")
        self.start_daemon()
        took_first = self.fetch(self.srv_v4, "ignore-1")
        st1 = self.status()
        if ROUTED:  # the failed flow lost its rule at once
            self.assertEqual(h.flow_rules(self.client_ns), [], "the failed flow kept its rule")
            self.assertGreaterEqual(st1["routed"]["rules_deleted"], 1)
        took_second = self.fetch(self.srv_v4, "ignore-2")
        st2 = self.status()
        self.stop_captures(cn, cp)
        self.assert_complete(native)
        npk = h.inspect(native)
        self.assert_no_leak(npk)
        print(f"\n[ignoring server] first fetch {took_first:.2f}s (watchdog fall-back), second "
              f"{took_second:.2f}s (pinned to the channel); watchdog {st2['watchdog']}")
        self.assertGreaterEqual(st1["watchdog"]["failed_back"], 1)
        self.assertGreaterEqual(st2["watchdog"]["pinned_by_cache"], 1)
        self.assertGreaterEqual(st2["watchdog"]["non_migrating_destinations"], 1)

    def test_5b_answers_never_arrive_natively_watchdog_falls_back(self):
        # The other non-migrating server: its answers never reach the client on the native
        # path (as when a server keeps sending to the old address): the censor drops every
        # server-to-client QUIC packet on the native link. The flow must fail back.
        addrs = ", ".join(a for a in self.client_native if ":" not in a)
        rules = ("table inet qsd_test_noanswer {\n chain forward_drop {\n"
                 "  type filter hook forward priority 0; policy accept;\n"
                 f"  ip daddr {{ {addrs} }} udp sport 443 drop\n }}\n}}\n")
        subprocess.run(["ip", "netns", "exec", self.censor_ns, "nft", "-f", "-"], input=rules,
                       text=True, check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "exec", self.censor_ns, "nft", "delete",
                                         "table", "inet", "qsd_test_noanswer"], check=False)
        self.start_daemon()
        took = self.fetch(self.srv_v4, "noanswer")
        st = self.status()
        print(f"\n[no native answers] fetch {took:.2f}s; watchdog {st['watchdog']}")
        self.assertGreaterEqual(st["watchdog"]["failed_back"], 1)

    def test_6_queue_overflow_fails_to_the_channel(self):
        # The daemon stops reading (SIGSTOP): its queue fills, and NFQA_CFG_F_FAIL_OPEN must
        # accept further packets with their pre-set channel mark: not native, not dropped.
        import signal
        import socket  # noqa: F401  (the flood runs in the client namespace, below)
        cn, native, cp, channel = self.captures("flood")
        d = self.start_daemon()
        os.kill(d.pid, signal.SIGSTOP)
        flood = ("import socket,os\n"
                 f"dst=('{self.srv_v4}', 443)\n"
                 "socks=[socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(50)]\n"
                 "for i in range(8000):\n"
                 "    socks[i % 50].sendto(b'\\x41' + os.urandom(99), dst)\n")
        try:
            lab_helpers.in_host(self.lab, "client", "python3", "-c", flood, timeout=60)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        time.sleep(1)
        st = self.status()
        self.stop_captures(cn, cp)
        self.assert_complete(native)  # the provider's capture may drop: counted by nft below
        npk, cpk = h.inspect(native), h.inspect(channel)
        self.assert_no_leak(npk)
        to_srv = lambda pk: sum(1 for p in pk if p.get("dst") == self.srv_v4  # noqa: E731
                                and p.get("dport") == 443 and p.get("payload_len") == 100)
        n_native, n_channel = to_srv(npk), to_srv(cpk)
        out_ch, out_na = st["paths"]["channel"]["packets"], st["paths"]["native"]["packets"]
        print(f"\n[flood] 8000 short-header datagrams, daemon stopped: {n_native} native "
              f"(queued, decided after SIGCONT), {8000 - n_native} to the channel (overflow, "
              f"fail-open; {n_channel} seen in the provider's lossy capture); kernel counters "
              f"channel {out_ch} / native {out_na} packets; queue {st['queues']['outbound']}")
        if ROUTED:
            # No queue: the unknown flows' packets took the channel route; the stopped
            # daemon only missed their copies.
            self.assertEqual(n_native, 0, "a flow went native while the daemon was stopped")
            self.assertGreaterEqual(out_ch, 8000, "packets were dropped")
            return
        self.assertLessEqual(n_native, 4096 + 64)  # at most the kernel queue's length
        self.assertGreaterEqual(8000 - n_native, 3000)  # the overflow really happened
        self.assertGreaterEqual(out_ch + out_na, 8000, "packets were dropped")

    def test_7_permissive_addressing(self):
        # The paper's mode: channel packets keep the native source address, so the provider
        # must accept it; the lab's provider does not, so this test widens its peer's
        # allowed IPs for the test (restored after).
        wg = ["ip", "netns", "exec", self.prov_ns, "wg"]
        out = subprocess.run([*wg, "show", self.prov_if, "allowed-ips"], capture_output=True,
                             text=True, check=True).stdout
        peer, allowed = out.split("\t", 1)
        allowed = ",".join(allowed.split())
        subprocess.run([*wg, "set", self.prov_if, "peer", peer, "allowed-ips",
                        allowed + ",198.18.1.0/24,2001:db8:1::/64"], check=True)
        self.addCleanup(subprocess.run, [*wg, "set", self.prov_if, "peer", peer, "allowed-ips",
                                         allowed], check=True)
        config = h.write_config(os.path.join(self.work, "permissive.toml"), self.channel_if,
                                addressing="permissive")
        cn, native, cp, channel = self.captures("permissive")
        self.start_daemon(config)
        took = self.fetch(self.srv_v4, "permissive")
        self.stop_captures(cn, cp)
        npk, cpk = self.read_captures(native, channel)
        initials = [p for p in cpk if p.get("dst") == self.srv_v4 and any(
            q.get("type") == "initial" for q in p.get("quic", []))]
        self.assertTrue(initials and all(p["src"] in self.client_native for p in initials),
                        "permissive: the channel must carry the native source address")
        nat_b = h.quic_bytes(npk, self.srv_v4)
        ch_b = sum(p["ip_len"] for p in cpk if p.get("dst") == self.srv_v4)
        print(f"\n[permissive] {took:.2f}s, client->server channel bytes {ch_b}, native {nat_b}")
        self.assertGreater(nat_b, SIZE_MB * 900_000)

    def big_page(self):
        """A SIZE_MB HTML page for Chromium (htdocs/big.html, ending in its marker), and the
        profile directory and certificate hash Chromium runs with: (home, spki)."""
        page = os.path.join(self.work, "htdocs", "big.html")
        if not os.path.exists(page):
            with open(page, "w") as f:
                f.write("<html><body><pre>")
                line = "QUICstep " * 11 + "\n"
                f.write(line * (SIZE_MB * 1000 * 1000 // len(line)))
                f.write('</pre><p id="marker">QUICstep big page</p></body></html>\n')
        home = os.path.join(self.work, "chrome-home")
        os.makedirs(home, exist_ok=True)
        return home, certs.spki_hash(os.path.join(self.work, "cert.pem"))

    def test_8_chromium_connected_sockets(self):
        # A real browser (Chromium's UDP sockets are connected): a 10 MB page over HTTP/3,
        # its name resolved by the system resolver (DNS through the channel).
        home, spki = self.big_page()
        cn, native, cp, channel = self.captures("chromium")
        self.start_daemon()
        t0 = time.time()
        res = lab_helpers.in_host(
            self.lab, "client",
            *chromium.command(home, spki, "https://open.test/big.html", 90,
                                                ["--enable-quic", "--origin-to-force-quic-on=open.test:443"]),
            check=False, timeout=120)
        took = time.time() - t0
        st = self.status()
        self.stop_captures(cn, cp)
        self.assertIn("QUICstep big page", res.stdout[-2000:], res.stderr[-2000:])
        npk, cpk = self.read_captures(native, channel)
        # Chromium prefers IPv6 when the name has an AAAA record: count both.
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4, self.srv_v6)
        self.assertTrue(any(p.get("dns") for p in cpk), "Chromium's DNS lookup avoided the channel")
        print(f"\n[chromium] {took:.2f}s, native share {share:.4f} ({nat_b} / {ch_b}); "
              f"watchdog {st['watchdog']}")
        self.assertGreaterEqual(share, 0.95)

    # --- native_prefixes and native_conntrack ---------------------------------------------
    def _fetch_file(self, dest, name, size_mb):
        """gtlsclient fetches a size_mb file (written into the site on first use) from dest;
        returns the seconds it took. Smaller than the 10 MB fetch where a test only needs a
        handshake and some data."""
        fname = f"{size_mb}M.bin"
        site = os.path.join(self.work, "htdocs", fname)
        if not os.path.exists(site):
            with open(site, "wb") as f:
                f.write(os.urandom(size_mb * 1000 * 1000))
        out_dir = os.path.join(self.work, name)
        os.makedirs(out_dir, exist_ok=True)
        t0 = time.time()
        res = lab_helpers.in_host(
            self.lab, "client", "timeout", "-k", "5", "60", "gtlsclient", "--quiet",
            "--exit-on-all-streams-close", f"--download={out_dir}", "--timeout=15s", dest, "443",
            f"https://open.test/{fname}", check=False, timeout=90)
        took = time.time() - t0
        got = os.path.join(out_dir, fname)
        size = os.path.getsize(got) if os.path.exists(got) else 0
        self.assertEqual(size, size_mb * 1000 * 1000,
                         f"{name}: download incomplete ({size} bytes): {res.stderr[-2000:]}")
        return took

    def _client_initials(self, packets, server):
        """The client's Initial packets to server in a capture (any source address)."""
        return [p for p in packets if p.get("dst") == server and p.get("dport") == 443 and any(
            q.get("type") == "initial" for q in p.get("quic", []))]

    def test_9_native_prefixes(self):
        # LAN exemption: the first server's addresses (v4 /32, v6 /128) are native_prefixes.
        # Their QUIC connections skip the channel, handshakes included; DNS (to the lab
        # resolver, and to an address inside the prefixes) keeps the channel; a server
        # outside the prefixes (the lab's second server address: the same gtlsserver, which
        # listens on every address of its host) keeps the ordinary split.
        other = self.lab["servers"][1]
        other_v4 = other["v4"][0] if isinstance(other["v4"], list) else other["v4"]
        self.assertNotEqual(other_v4, self.srv_v4)
        config = h.write_config(
            os.path.join(self.work, "prefixes.toml"), self.channel_if,
            extra=f'native_prefixes = ["{self.srv_v4}/32", "{self.srv_v6}/128"]\n')
        cn, native, cp, channel = self.captures("prefixes")
        d = self.start_daemon(config)
        took_in = self._fetch_file(self.srv_v4, "prefixes-in", 1)
        took_in6 = self._fetch_file(self.srv_v6, "prefixes-in6", 1)
        took_out = self._fetch_file(other_v4, "prefixes-out", 2)
        # DNS: to the lab resolver (outside the prefixes), and to an address inside them
        # (nobody answers there: only where the query went matters).
        lab_helpers.in_host(self.lab, "client", "dig", "+short", "+tries=1", "+time=3",
                            "open.test", check=False)
        lab_helpers.in_host(self.lab, "client", "dig", "+short", "+tries=1", "+time=1",
                            f"@{self.srv_v4}", "open.test", check=False)
        st = self.status()
        self.stop_captures(cn, cp)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        self.assert_complete(native, channel)
        npk, cpk = h.inspect(native), h.inspect(channel)
        exempt = {self.srv_v4, self.srv_v6}
        # The exempt servers' handshakes are on the native link, from the native address...
        for server in (self.srv_v4, self.srv_v6):
            initials = self._client_initials(npk, server)
            self.assertTrue(initials, f"no Initial to {server} on the native link")
            self.assertTrue(all(p["src"] in self.client_native for p in initials), initials[:1])
        # ... and nothing of those QUIC connections at the provider.
        exempt_at_provider = sum(h.quic_bytes(cpk, s) for s in exempt)
        self.assertEqual(exempt_at_provider, 0, "an exempt connection used the channel")
        # The lookup to the lab resolver went through the channel, and nothing that must not
        # leak is on the native link apart from the exempt servers' traffic (checked below).
        self.assertTrue(any(p.get("dns") for p in cpk), "the DNS lookup did not use the channel")
        self.assert_no_leak([p for p in npk if not {p.get("src"), p.get("dst")} & exempt])
        # The server outside the prefixes: its handshake only at the provider, none on the
        # native link; its data moved native as usual.
        self.assertTrue(self._client_initials(cpk, other_v4), "no Initial to the other server "
                        "at the provider")
        other_native = [p for p in npk if other_v4 in (p.get("src"), p.get("dst"))]
        self.assert_no_leak(other_native)
        self.assertEqual(self._client_initials(npk, other_v4), [])
        nat_o, ch_o = h.quic_bytes(npk, other_v4), h.quic_bytes(cpk, other_v4)
        dns_exempt = lambda pk: [p for p in pk if p.get("dst") == self.srv_v4  # noqa: E731
                                 and p.get("dport") == 53]
        dns_exempt_native, dns_exempt_channel = dns_exempt(npk), dns_exempt(cpk)
        print(f"\n[native_prefixes] exempt fetches {took_in:.2f}s (v4, 1 MB), {took_in6:.2f}s "
              f"(v6, 1 MB): {h.quic_bytes(npk, self.srv_v4) + h.quic_bytes(npk, self.srv_v6)} "
              f"native bytes, {exempt_at_provider} at the provider; other server {took_out:.2f}s "
              f"(2 MB): {nat_o} native / {ch_o} channel bytes; DNS to the exempt address: "
              f"{len(dns_exempt_channel)} packets at the provider, {len(dns_exempt_native)} on "
              f"the native link; watchdog {st['watchdog']}")
        self.assertGreaterEqual(nat_o / max(1, nat_o + ch_o), 0.95)
        self.assertGreaterEqual(st["watchdog"]["moved_native"], 1)
        # DNS to an address inside the prefixes keeps the channel (client/README.md, "LAN
        # exemption": a LAN resolver forwards the names to the ISP).
        self.assertEqual(dns_exempt_native[:3], [], "DNS to an exempt address went native")
        self.assertTrue(dns_exempt_channel, "DNS to an exempt address did not use the channel")

    def test_10_native_conntrack(self):
        # A host whose firewall accepts only tracked answers. Without such a firewall nothing
        # registers conntrack in the namespace (stateless addressing has no NAT), so the test
        # installs one: QUIC answers from port 443 are accepted only in ct state established,
        # the rest dropped (untracked ones included: `notrack` on the bulk path, the default
        # before native_conntrack became "unset: tracked unless nat", or native_conntrack =
        # false, loses every native answer here). The daemon runs its default config.
        rules = ("table inet qsd_test_stateful {\n"
                 " counter established_443 {}\n counter dropped_443 {}\n"
                 " chain input {\n  type filter hook input priority filter; policy accept;\n"
                 "  udp sport 443 ct state established counter name established_443 accept\n"
                 "  udp sport 443 counter name dropped_443 drop\n }\n}\n")
        nft = ["ip", "netns", "exec", self.client_ns, "nft"]
        subprocess.run([*nft, "-f", "-"], input=rules, text=True, check=True)
        self.addCleanup(subprocess.run, [*nft, "delete", "table", "inet", "qsd_test_stateful"],
                        check=False)
        config = h.write_config(os.path.join(self.work, "conntrack.toml"), self.channel_if)
        cn, native, cp, channel = self.captures("conntrack")
        d = self.start_daemon(config)
        took = self.fetch(self.srv_v4, "conntrack")
        self.assert_flow_moved(self.srv_v4, "conntrack")
        # conntrack saw the native flow: an entry from a native address to the server's port
        # 443 whose reply direction (the native answers) is to that native address and was
        # seen (not [UNREPLIED]). With nat addressing, the channel's entry (zone 1) has the
        # tunnel address in its reply direction instead.
        with open(f"/proc/{d.pid}/net/nf_conntrack") as f:  # the daemon's namespace's table
            entries = [line.strip() for line in f if "udp" in line.split()[:3]
                       and f"dst={self.srv_v4} " in line and " dport=443 " in line]
        native_entries = [e for e in entries if "[UNREPLIED]" not in e
                          and e.split("src=")[1].split()[0] in self.client_native
                          and e.split("dst=")[2].split()[0] in self.client_native]
        self.assertTrue(native_entries, f"no tracked native flow; conntrack entries: {entries}")

        def counter(name):
            import json
            out = subprocess.run([*nft, "-j", "list", "counter", "inet", "qsd_test_stateful",
                                  name], capture_output=True, text=True, check=True).stdout
            return next(o["counter"]["packets"] for o in json.loads(out)["nftables"]
                        if "counter" in o)
        established, dropped = counter("established_443"), counter("dropped_443")
        self.stop_captures(cn, cp)
        # The daemon's counters read after the provider's capture stopped: whatever the
        # channel carried while the capture ran is in both. (The kernel's IPv6 router
        # solicitations, sent on the channel interface from its link-local address with
        # backoff (4 s, 8 s, 16 s, ...), are rewritten to the tunnel address by the
        # stateless egress chain and reach the provider while the daemon runs: one between
        # a status read and the capture's end is at the provider but not in the status. So
        # are its MLD reports: channel_bytes_at_provider.)
        st = self.status()
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        reported = st["paths"]["channel"]["bytes"]
        at_provider = self.channel_bytes_at_provider(cpk)
        native_in = sum(1 for p in npk if p.get("src") == self.srv_v4 and p.get("sport") == 443)
        print(f"\n[native_conntrack] {took:.2f}s, native share {share:.4f} ({nat_b} native / "
              f"{ch_b} channel bytes); channel bytes reported {reported}, at provider "
              f"{at_provider}; stateful firewall: {established} established answers accepted, "
              f"{dropped} dropped ({native_in} answers on the native link); conntrack: "
              f"{native_entries[0]}")
        self.assertEqual(dropped, 0, "answers the stateful firewall did not know were dropped")
        self.assertGreaterEqual(established, 1, "no tracked answer passed the firewall")
        self.assertGreaterEqual(share, 0.95)
        self.assert_channel_bytes(reported, at_provider)

    def test_10b_fragments_of_a_native_flow(self):
        # The bulk rule has no fragment compare: nft refuses transport-header loads of a
        # non-first fragment, so one never matches the native set (it has no port: it could
        # be DNS) and takes the fragment rule to the channel. A first fragment carries its
        # datagram's first bytes and is judged by them. (Local sockets' datagrams are
        # fragmented after the hook; a raw socket hands it fragments.)
        import re
        cn, native, cp, channel = self.captures("frag")
        d = self.start_daemon()
        self.fetch(self.srv_v4, "frag")
        if ROUTED:
            # A raw socket's packets name no port to the routing (the flow rules match UDP
            # ports): any port shows it; the flow's own rule went with its socket.
            client = next(a for a in self.client_native if ":" not in a)
            port = 40999
        else:
            listing = subprocess.run(["ip", "netns", "exec", self.client_ns, "nft", "list",
                                      "set", "inet", "quicstep", "native4"],
                                     capture_output=True, text=True).stdout
            m = re.search(r"(\d+\.\d+\.\d+\.\d+) \. (\d+) \. " + re.escape(self.srv_v4) +
                          r" \. 443", listing)
            self.assertTrue(m, f"no native flow to {self.srv_v4}: {listing}")
            client, port = m.group(1), int(m.group(2))
        before = self.status()["paths"]["channel"]["packets"]
        # One 308-byte UDP datagram of that flow, short-header first byte, in two fragments:
        # 48 bytes (UDP header + 40) with more-fragments, then the other 260 at offset 48.
        send = ("import socket,struct\n"
                f"src,dst=socket.inet_aton('{client}'),socket.inet_aton('{self.srv_v4}')\n"
                f"udp=struct.pack('!HHHH',{port},443,308,0)+b'\\x41'*300\n"
                "def ip(frag,data):\n"
                "    h=struct.pack('!BBHHHBBH4s4s',0x45,0,20+len(data),0x5151,frag,64,17,0,src,dst)\n"
                "    return h+data\n"
                "s=socket.socket(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_RAW)\n"
                f"s.sendto(ip(0x2000,udp[:48]),('{self.srv_v4}',0))\n"
                f"s.sendto(ip(6,udp[48:]),('{self.srv_v4}',0))\n")
        lab_helpers.in_host(self.lab, "client", "python3", "-c", send)
        time.sleep(0.5)
        st = self.status()
        after = st["paths"]["channel"]["packets"]
        self.stop_captures(cn, cp)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        npk, cpk = self.read_captures(native, channel)
        frags = [p for p in npk if p.get("fragment") and p.get("dst") == self.srv_v4]
        first = [p for p in frags if p["ip_len"] == 68]
        rest = [p for p in frags if p["ip_len"] == 280]
        at_provider = [p for p in cpk if p.get("fragment") and p.get("dst") == self.srv_v4]
        print(f"\n[fragments] flow {client}:{port} -> {self.srv_v4}:443: on the native link "
              f"{len(first)} first fragment(s), {len(rest)} non-first; channel packets "
              f"counted {after - before} meanwhile; at the provider "
              f"{[(p['src'], p['ip_len']) for p in at_provider]}; native link fragments "
              f"{[(p['src'], p['ip_len']) for p in frags]}")
        self.assertEqual(rest, [], "a non-first fragment of a native flow went native")
        if ROUTED:
            # A raw socket's packets follow the main table (no port to route by): the guard
            # judged the first fragment by its header and dropped the rest.
            self.assertGreaterEqual(st["routed"]["guard_drops"]["raw_fragment"], 1)
            return
        self.assertGreaterEqual(after - before, 1, "the non-first fragment did not reach the "
                                "channel device")
        self.assertIn(280, [p["ip_len"] for p in at_provider if p["src"] in self.tunnel_addrs],
                      "the non-first fragment did not reach the provider")

    def test_11_native_switch_waits_for_the_finished(self):
        """An upload's first native short header leaves at least min_delay (1 ms) after the
        flow's last long header (the Finished) left on the channel, not right behind it; none
        of its short headers takes the channel (on the routed path with `[native_switch] hold`:
        they wait in the queue for the switch; without it the first flight went through the
        channel, 11 datagrams), and at the server nothing the flow sent through the channel
        arrives after its first native packet."""
        c = self.lab["client"]
        nat_if, ch_if = c["native"]["interface"], c["channel"]["interface"]
        native = os.path.join(self.work, "switch-native.pcap")
        channel = os.path.join(self.work, "switch-channel.pcap")
        at_server = os.path.join(self.work, "switch-server.pcap")
        cn = h.start_capture(self.procs, self.client_ns, nat_if, native)
        cc = h.start_capture(self.procs, self.client_ns, ch_if, channel)
        cs = h.start_capture(self.procs, self.srv_ns, "to-inet", at_server)
        d = self.start_daemon(h.write_config(os.path.join(self.work, "hold.toml"),
                                             self.channel_if,
                                             extra="[native_switch]\nhold = true\n"))
        data = os.path.join(self.work, "up.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(2_000_000))
        res = lab_helpers.in_host(self.lab, "client", "timeout", "-k", "5", "60", "gtlsclient",
                                  "--quiet", "--exit-on-all-streams-close", "--timeout=15s",
                                  f"--data={data}", self.srv_v4, "443",
                                  "https://open.test/upload", check=False, timeout=90)
        self.assertEqual(res.returncode, 0, res.stderr[-2000:])
        st = self.status()
        human = h.ctl(self.client_ns, self.sock, "status").stdout
        self.stop_captures(cn, cc, cs)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        npk, cpk = self.read_captures(native, channel)
        self.assert_complete(at_server)
        spk = h.inspect(at_server)
        to_srv = lambda p: p.get("dst") == self.srv_v4 and p.get("dport") == 443  # noqa: E731
        first_native = next(p for p in npk if to_srv(p) and p.get("quic"))
        port = first_native["sport"]
        longs = [p for p in cpk if to_srv(p) and p.get("sport") == port and
                 any(q.get("form") == "long" for q in p.get("quic", []))]
        # At the server: the flow's datagrams from the provider (the channel) that arrive
        # after its first one from the client's own address.
        provider = self.lab["provider"]["v4"]
        arrived = [p for p in spk if to_srv(p) and p.get("quic")]
        first_native_in = next(p["time"] for p in arrived if p.get("src") == first_native["src"])
        late = [p for p in arrived if p.get("src") == provider and p["time"] > first_native_in]
        on_channel = sum(1 for p in arrived if p.get("src") == provider)
        # Datagrams that begin with a short header (the Finished's may carry one coalesced).
        shorts_on_channel = [p for p in cpk if to_srv(p) and p.get("sport") == port and
                             p.get("quic") and p["quic"][0].get("form") == "short"]
        before = [p for p in longs if p["time"] <= first_native["time"]]
        self.assertTrue(before, "no long header of the flow on the channel before its first "
                                "native packet")
        gap_ms = (first_native["time"] - before[-1]["time"]) * 1000
        sw = st["native_switch"]
        print(f"\n[switch] first native short header {gap_ms:.2f} ms after the flow's last long "
              f"header on the channel; {sw}; queue {st['queues']['outbound']}; at the server "
              f"{len(late)} of {on_channel} channel datagrams after the first native one; "
              f"hold {st.get('routed', {}).get('switch_hold')}")
        self.assertGreaterEqual(sw["rtt_samples"], 1)
        self.assertGreaterEqual(sw["switch_waits"], 1)
        self.assertEqual(len(shorts_on_channel), 0,
                         "short headers of the upload took the channel before its switch")
        self.assertEqual(len(late), 0, "the first native packets overtook channel ones")
        self.assertGreaterEqual(st["queues"]["outbound"]["deferred"], 1)
        if ROUTED:
            self.assertGreaterEqual(st["routed"]["switch_hold"]["flows_added"], 1)
            self.assertIn(f"hold at the switch: {st['routed']['switch_hold']['flows']} flows "
                          f"switching ({st['routed']['switch_hold']['flows_added']} so far",
                          human)
        self.assertIn(f"native switch: {sw['switch_waits']} flows waited for their Finished",
                      human)
        self.assertGreaterEqual(gap_ms, 0.5)

    def test_12_icmp_errors_through_the_channel_reach_the_socket(self):
        """Stateless addressing: connected UDP sockets send through the channel (port 53: DNS
        keeps the channel), in both families. The errors quote the datagram as it left the
        channel device, from the tunnel address; the daemon's ICMP error rules give the
        quoted source back (with the ICMP checksum), so the kernel finds the socket, as it
        does without quicstepd:
        - to a closed port on the server: its port unreachable (the server's address is in
          the channel's maps: the outer destination is rewritten too); recv() fails with
          ECONNREFUSED at once;
        - with a TTL / hop limit of 1: the provider's time exceeded (a router the maps do
          not know: the outer destination stays the tunnel address); it reaches the
          socket's error queue (IP_RECVERR);
        - a 1300-byte datagram with "don't fragment" (IP_PMTUDISC_DO), where the provider's
          route to the server allows 1280 bytes: the provider's fragmentation needed /
          packet too big reaches the error queue with the MTU, and the socket's path MTU
          (IP_MTU / IPV6_MTU) drops to it.
        Without the rules every one of them is lost (recv() waits for its timeout). With nat
        addressing (quicstepd_lab_nat runs this test too) conntrack translates the errors
        back, and no rule is needed."""
        probe = (
            "import socket, struct, sys, time\n"
            "v6 = ':' in sys.argv[1]\n"
            "level = socket.IPPROTO_IPV6 if v6 else socket.IPPROTO_IP\n"
            "s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)\n"
            "s.settimeout(3)\n"
            "queued = sys.argv[2] != 'closed'\n"
            "if queued:\n"
            "    s.setsockopt(level, 25 if v6 else 11, 1)  # IPV6_RECVERR / IP_RECVERR\n"
            "if sys.argv[2] == 'ttl1':\n"
            "    s.setsockopt(level, socket.IPV6_UNICAST_HOPS if v6 else socket.IP_TTL, 1)\n"
            "if sys.argv[2] == 'toobig':\n"
            "    s.setsockopt(level, 23 if v6 else 10, 2)  # IPV6_/IP_MTU_DISCOVER: DO\n"
            "s.connect((sys.argv[1], 53))\n"
            "s.send(b'x' * 1300 if sys.argv[2] == 'toobig' else b'not a query' * 4)\n"
            "if queued:\n"
            "    time.sleep(1.5)\n"
            "    try:\n"
            "        flags = socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT\n"
            "        _, anc, _, _ = s.recvmsg(1500, 512, flags)\n"
            "        _, _, typ, code, _, info = struct.unpack('IBBBBI', anc[0][2][:12])\n"
            "        pmtu = s.getsockopt(level, 24 if v6 else 14)  # IPV6_MTU / IP_MTU\n"
            "        print('icmp %d/%d info %d, path mtu %d' % (typ, code, info, pmtu))\n"
            "    except (BlockingIOError, TimeoutError):  # a timeout socket waits first\n"
            "        print('no error')\n"
            "    sys.exit()\n"
            "try:\n"
            "    s.recv(100)\n"
            "    print('answer')\n"
            "except ConnectionRefusedError:\n"
            "    print('refused')\n"
            "except socket.timeout:\n"
            "    print('timeout')\n")
        # The bottleneck: the provider's routes to the server allow 1280 bytes (locked: a
        # forwarded packet honours it), past the channel's 1420. The client's path-MTU
        # exceptions it causes go with the test.
        prov = lambda *cmd: lab_helpers.in_host(self.lab, "provider", *cmd)  # noqa: E731
        for fam, dest, host in (("-4", self.srv_v4, "/32"), ("-6", self.srv_v6, "/128")):
            route = prov("ip", fam, "route", "get", dest).stdout.split()
            # Through a gateway (the lab's inet router) or, were the server on the
            # provider's own link, directly.
            via = ["via", route[route.index("via") + 1]] if "via" in route else []
            prov("ip", fam, "route", "add", dest + host, *via, "dev",
                 route[route.index("dev") + 1], "mtu", "lock", "1280")
            self.addCleanup(lab_helpers.in_host, self.lab, "provider", "ip", fam, "route",
                            "del", dest + host, check=False)
            self.addCleanup(lab_helpers.in_host, self.lab, "client", "ip", fam, "route",
                            "flush", "cache", check=False)
        d = self.start_daemon()
        before = self.status()["paths"]["channel"]["in_packets"]
        results = {}
        for dest in (self.srv_v4, self.srv_v6):
            for kind in ("closed", "ttl1", "toobig"):
                res = lab_helpers.in_host(self.lab, "client", "python3", "-c", probe, dest, kind,
                                          check=False, timeout=30)
                results[(dest, kind)] = res.stdout.strip() or res.stderr[-300:]
        after = self.status()["paths"]["channel"]["in_packets"]
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        print(f"\n[icmp] {results}; channel packets in: {after - before}")
        # The connected socket's cached route is the native one (quicstepd picks the channel
        # per packet, after the socket's lookup), so its path MTU is the native link's (1500)
        # until an error lowers it: the provider's "too big" lowers that route's, to 1280.
        # The routed path routes DNS through the channel: its device's MTU. There the "too
        # big" reaches the error queue but leaves the socket's path MTU: the kernel files the
        # exception under a route it looks up without ports (ipv4_sk_update_pmtu), so the
        # port-selected channel rule does not match and the main table's route gets it.
        # (TCP reduces its MSS by its own socket's lookup, with ports; QUIC probes its own.)
        mtu = (lab_helpers.in_host(self.lab, "client", "cat",
                                   f"/sys/class/net/{self.channel_if}/mtu").stdout.strip()
               if ROUTED else "1500")
        lowered = mtu if ROUTED else "1280"
        self.assertEqual(results, {
            (self.srv_v4, "closed"): "refused",
            (self.srv_v4, "ttl1"): f"icmp 11/0 info 0, path mtu {mtu}",  # time exceeded
            (self.srv_v4, "toobig"): f"icmp 3/4 info 1280, path mtu {lowered}",  # fragmentation needed
            (self.srv_v6, "closed"): "refused",
            (self.srv_v6, "ttl1"): f"icmp 3/0 info 0, path mtu {mtu}",  # time exceeded
            (self.srv_v6, "toobig"): f"icmp 2/0 info 1280, path mtu {lowered}"})  # packet too big
        self.assertGreaterEqual(after - before, 6)  # the errors came through the channel

    def test_13_new_device_guarded_at_once(self):
        """Routed path: a device that appears while the daemon runs gets the guard when the
        kernel announces it (rtnetlink link changes), not at the next 2-second check: three
        veth pairs, one after another, each guarded within 400 ms (by the periodic check
        alone, all three would be with a chance of 1 in 125; measured: ~120 ms each under
        ASan, most of it the attachment)."""
        if not ROUTED:
            self.skipTest("the guard is the routed native path's")
        self.start_daemon()
        took = []
        for n in range(3):
            name = f"qsd-new{n}"
            self.addCleanup(subprocess.run, ["ip", "netns", "exec", self.client_ns, "ip",
                                             "link", "del", name], check=False)
            before = self.status()["routed"]["devices_guarded"]
            t0 = time.time()
            subprocess.run(["ip", "netns", "exec", self.client_ns, "ip", "link", "add", name,
                            "type", "veth", "peer", "name", f"qsd-peer{n}"], check=True)
            guarded = before
            while guarded < before + 2 and time.time() - t0 < 2.5:
                time.sleep(0.01)
                guarded = self.status()["routed"]["devices_guarded"]
            took.append(round((time.time() - t0) * 1000))
            self.assertEqual(guarded, before + 2, "a new device was not guarded")
        print(f"\n[new devices] guarded after {took} ms")
        self.assertLess(max(took), 400, f"guarded only by the periodic check: {took} ms")
        # Each also got its DNS rule (a resolver's socket that names it finds a route), and
        # a device that goes takes its rule with it (a container's veth each would gather).
        def rules():
            return "".join(subprocess.run(["ip", "netns", "exec", self.client_ns, "ip", fam,
                                           "rule"], capture_output=True, text=True,
                                          check=True).stdout for fam in ("-4", "-6"))
        for n in range(3):
            self.assertEqual(len(re.findall(rf"oif qsd-new{n} ipproto udp dport 53 lookup main",
                                            rules())), 2, f"no DNS rules for qsd-new{n}")
        subprocess.run(["ip", "netns", "exec", self.client_ns, "ip", "link", "del", "qsd-new0"],
                       check=True)
        t0 = time.time()
        while "qsd-new0" in rules() and time.time() - t0 < 3:
            time.sleep(0.05)
        self.assertNotIn("qsd-new0", rules(), "a device that went kept its DNS rules")
        self.assertNotIn("qsd-peer0", rules())
        self.assertIn("oif qsd-new1 ", rules())

    def test_13b_a_second_daemon_leaves_the_running_one_alone(self):
        """A second quicstepd in the same network namespace (started by hand beside the
        service), and a --cleanup while one runs, are refused: exit 1, the running daemon's pid
        named, nothing of its rules, guard or control socket touched (its start would have
        removed them as a crash's leftovers, and DNS would have met no rule until the first
        healed). The first goes on: a fetch still moves native with no leak."""
        cn, native, cp, channel = self.captures("second")
        d = self.start_daemon()

        def rules():
            return [subprocess.run(["ip", "netns", "exec", self.client_ns, "ip", fam, "rule"],
                                   capture_output=True, text=True, check=True).stdout
                    for fam in ("-4", "-6")], h.kernel_state(self.client_ns)
        before = rules()
        other_sock = os.path.join(self.work, "second.sock")
        for what, extra in (("start", ["--control", other_sock]), ("cleanup", ["--cleanup"])):
            t0 = time.time()
            res = lab_helpers.in_host(self.lab, "client", h.QSD, "--config", self.config, *extra,
                                      check=False, timeout=30)
            took = time.time() - t0
            print(f"\n[second daemon, {what}] exit {res.returncode} after {took:.1f} s: "
                  f"{res.stderr.strip()}")
            self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
            self.assertIn(f"another quicstepd runs in this network namespace (held by pid "
                          f"{d.pid})", res.stderr)
            self.assertEqual(rules(), before, f"the {what} touched the rules")
            if ROUTED:
                self.assertTrue(h.guard_pinned(), f"the {what} removed the guard")
            self.assertIsNone(d.poll(), "the running daemon died")
        self.assertFalse(os.path.exists(other_sock))
        self.status()  # its control socket still answers
        self.fetch(self.srv_v4, "after-second")
        self.stop_captures(cn, cp)
        self.assert_clean_exit(d)
        npk, cpk = self.read_captures(native, channel)  # no leak
        _, _, share = self.native_share(npk, cpk, self.srv_v4)
        self.assertGreater(share, 0.95, "the fetch did not move native")
        # Once it stopped, --cleanup runs.
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--cleanup", "--config",
                                  self.config, check=False, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)

    def test_14_auto_takes_the_queue_path_when_routed_cannot_start(self):
        """The default native path ("auto") is routed; where the routed path cannot start
        (here: its pin directory is not on a BPF filesystem, as on a machine without BPF)
        the daemon takes the queue path, says why, and the fetch keeps the split with no
        leak. native_path = "routed" written out fails the start instead, installing
        nothing."""
        if not ROUTED:
            self.skipTest("the fallback of the default (routed) native path")
        nobpf = os.path.join(self.work, "nobpf")  # /tmp: tmpfs or the root filesystem
        os.makedirs(nobpf, exist_ok=True)
        pin = os.path.join(nobpf, "quicstep")
        explicit = os.path.join(self.work, "routed-nobpf.toml")
        with open(self.config) as f:
            base = f.read().replace(f'guard_pin_dir = "{h.GUARD_PIN_DIR}"\n', "")
        self.assertNotIn("native_path", base)
        with open(explicit, "w") as f:
            f.write(base + f'native_path = "routed"\nguard_pin_dir = "{pin}"\n')
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--config", explicit, "--control",
                                  self.sock, check=False, timeout=30)
        self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
        self.assertIn("not a BPF filesystem", res.stdout + res.stderr)
        self.assertEqual(h.kernel_state(self.client_ns),
                         {"nft": False, "iptables": False, "rules": False})
        auto = os.path.join(self.work, "auto-nobpf.toml")
        with open(auto, "w") as f:
            f.write(base + f'guard_pin_dir = "{pin}"\n')
        cn, native, cp, channel = self.captures("fallback")
        d = self.start_daemon(auto)
        st = self.status()
        self.assertEqual(st["native_path"], "queue")
        self.assertIn("not a BPF filesystem", st.get("routed_unavailable", ""))
        human = h.ctl(self.client_ns, self.sock, "status").stdout
        self.assertIn("native path: queue (routed unavailable: native guard: ", human)
        took = self.fetch(self.srv_v4, "fallback")
        self.assertTrue(h.native_set_has(self.client_ns, self.srv_v4),
                        "the queue path's native set does not hold the flow")
        self.stop_captures(cn, cp)
        self.assert_clean_exit(d)
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        print(f"\n[fallback] {took:.2f}s, native share {share:.4f}; "
              f"{st['routed_unavailable']}")
        self.assertGreaterEqual(share, 0.95)

    def test_15_the_units_capabilities_suffice(self):
        """The systemd unit's capabilities (client/quicstepd.service, CapabilityBoundingSet)
        and nothing more: started under them (setpriv: a root process keeps only its bounding
        set across exec, as systemd gives a root service), the daemon takes the routed path
        and a fetch keeps the split with no leak. With CAP_BPF taken away as well, "auto"
        takes the queue path and says why (without CAP_PERFMON it would too: loading the
        guard fails with EFAULT)."""
        if not ROUTED:
            self.skipTest("the routed native path's capabilities")
        caps = unit_caps.unit_capabilities("quicstepd.service")
        self.assertIn("CAP_BPF", caps)
        self.assertIn("CAP_PERFMON", caps)
        under = unit_caps.under
        for capset, path in ((caps, "routed"), ([c for c in caps if c != "CAP_BPF"], "queue")):
            cn, native, cp, channel = self.captures(f"caps-{path}")
            p = self.procs.start(self.client_ns, [*under(capset), h.QSD, "--config", self.config,
                                                  "--control", self.sock],
                                 os.path.join(self.work, f"quicstepd-caps-{path}.log"))
            h.wait_daemon(self.client_ns, self.sock, p)
            st = self.status()
            why = st.get("routed_unavailable", "")
            self.assertEqual(st["native_path"], path, why)
            took = self.fetch(self.srv_v4, f"caps-{path}")
            self.stop_captures(cn, cp)
            self.assert_clean_exit(p)
            npk, cpk = self.read_captures(native, channel)
            share = self.native_share(npk, cpk, self.srv_v4)[2]
            print(f"\n[capabilities {' '.join(capset)}] {path}, {took:.2f}s, native share "
                  f"{share:.4f} {why}")
            self.assertGreaterEqual(share, 0.95)

    def test_16_interface_channel(self):
        """channel_kind = "interface": the lab's channel device taken as any tunnel interface
        that another program brought up — quicstepd reads no WireGuard state and no peer
        endpoints: it adds default routes through the device in its own table (51822 here;
        the lab's 51820 stays untouched), exempts channel_exempt, and judges health from the
        device's byte counters. A fetch's handshake reaches the provider through it, its data
        goes native, nothing leaks; at exit the routes are gone and the device stays."""
        def routes(table):
            return [line for fam in ("-4", "-6") for line in lab_helpers.in_host(
                self.lab, "client", "ip", fam, "route", "show", "table", str(table),
                check=False).stdout.splitlines()]

        endpoint = self.lab["client"]["channel"]["endpoint"].rsplit(":", 1)[0]
        config = h.write_config(os.path.join(self.work, "interface.toml"), self.channel_if,
                                extra=f'channel_kind = "interface"\n'
                                      f'channel_exempt = ["{endpoint}"]\nrouting_table = 51822\n')
        lab_routes = routes(51820)
        self.assertEqual(routes(51822), [], "table 51822 is not empty before the test")
        cn, native, cp, channel = self.captures("interface")
        d = self.start_daemon(config)
        ours = routes(51822)
        self.assertEqual(sorted(r.split()[:3] for r in ours),
                         [["default", "dev", self.channel_if]] * 2, ours)
        took = self.fetch(self.srv_v4, "interface")
        # The health from the device's counters (the first lookup also puts DNS in the
        # provider's capture).
        st = h.wait_channel_working(self.lab, self.status)
        self.stop_captures(cn, cp)
        self.assert_clean_exit(d)
        ch = st["channel"]
        print(f"\n[interface channel] fetch {took:.2f}s; channel {ch}")
        self.assertEqual(ch["kind"], "interface")
        self.assertNotIn("wireguard", ch)
        self.assertGreater(ch["device"]["tx_bytes"], 0)
        self.assertGreater(ch["device"]["rx_bytes"], 0)
        self.assertEqual(ch["health"], "working")
        self.assertIsNone(ch["handshake_age_s"])
        self.assertEqual(routes(51822), [], "the interface channel's routes outlived its exit")
        self.assertEqual(routes(51820), lab_routes, "the lab's channel table was touched")
        self.assertEqual(lab_helpers.in_host(self.lab, "client", "ip", "link", "show",
                                             self.channel_if, check=False).returncode, 0,
                         "the tunnel's device is not quicstepd's to delete")
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        initials = [p for p in cpk if p.get("dst") == self.srv_v4 and any(
            q.get("type") == "initial" for q in p.get("quic", []))]
        print(f"[interface channel] native share {share:.4f} ({nat_b} native / {ch_b} "
              f"channel bytes), {len(initials)} Initials at the provider")
        self.assertTrue(initials and all(p["src"] in self.tunnel_addrs for p in initials),
                        "the handshake did not reach the provider through the interface")
        self.assertTrue(any(p.get("dns") for p in cpk), "the DNS lookup did not use the channel")
        self.assertGreaterEqual(share, 0.95)

    def test_17_strict_rp_filter(self):
        """Strict IPv4 reverse-path filtering (rp_filter 1 in conf/all and on every device,
        RHEL's default) drops a moved flow's native answers (their reverse route is the
        channel's) and, on the queue path, the channel's own: a 10 MB fetch hung without
        the daemon's loosening. quicstepd loosens every strict device to 2 at start (all/
        stays 1), again when another tool sets one back (within its 2 s device check), and
        puts the devices' values back at exit."""
        ns = self.client_ns
        conf = "/proc/sys/net/ipv4/conf"

        def read(dev):
            return lab_helpers.in_host(self.lab, "client", "cat",
                                       f"{conf}/{dev}/rp_filter").stdout.strip()

        def write_all(value):
            subprocess.run(["ip", "netns", "exec", ns, "sh", "-c",
                            f"for f in {conf}/*/rp_filter; do echo {value} > $f; done"],
                           check=True)

        devices = [d for d in lab_helpers.in_host(self.lab, "client", "ls", conf).stdout.split()
                   if d not in ("all", "default", "lo")]
        self.addCleanup(write_all, 0)  # the lab's value
        write_all(1)
        d = self.start_daemon()
        self.assertEqual({dev: read(dev) for dev in devices}, {dev: "2" for dev in devices})
        self.assertEqual(read("all"), "1")
        self.fetch(self.srv_v4, "rpf-start")
        native_dev = self.lab["client"]["native"]["interface"]
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                        f"net.ipv4.conf.{native_dev}.rp_filter=1"], check=True)
        time.sleep(2.5)  # the daemon's device check
        self.assertEqual(read(native_dev), "2", "set back to strict and not loosened again")
        before = self.status()
        self.fetch(self.srv_v4, "rpf-again")
        st = self.status()
        got = st["paths"]["native"]["in_bytes"] - before["paths"]["native"]["in_bytes"]
        print(f"\n[strict rp_filter] devices loosened {devices}; {SIZE_MB} MB fetched twice, the second "
              f"with {got} bytes in natively")
        self.assertGreater(got, 0.9 * SIZE_MB * 1000 * 1000, "the answers did not come natively")
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        self.assertEqual({dev: read(dev) for dev in devices}, {dev: "1" for dev in devices},
                         "the devices' values are not back")

    LAN_NS, LAN_V4, LAN_V6 = h.LAN_NS, h.LAN_V4, h.LAN_V6

    def lan_host(self):
        h.lan_host(self, self.client_ns, self.lab["client"]["native"]["interface"])

    def read_lan_captures(self, native, channel):
        """Both captures of a LAN test, complete and decoded; the native one without a leak
        from the client or the LAN host, and without a flow's packet that left with the LAN
        address (ICMP errors the LAN host sends about a channel flow's late packets follow
        the main table, as the host's own do: not judged here)."""
        self.assert_complete(native, channel)
        npk, cpk = h.inspect(native), h.inspect(channel)
        lan = {self.LAN_V4, self.LAN_V6}
        bad = h.leaks(npk, self.client_native | self.tunnel_addrs | lan)
        self.assertEqual(bad[:5], [], f"{len(bad)} leaked packets on the native link")
        unnated = [p for p in npk if p.get("src") in lan and p.get("proto") in ("udp", "tcp")]
        self.assertEqual(unnated[:3], [], "a LAN host's packet left without the router's NAT")
        return npk, cpk

    def test_18_lan_host_behind_the_client(self):
        """A router's LAN host: its packets are forwarded, never seen on output. Its DNS and
        handshakes must take the channel as the host's own do (the queue path let its Initial
        leave natively), and a flow moved native must meet the router's masquerade (the
        routed path let it leave with the LAN address, and the 10 MB fetch got 0 bytes):
        the routed path keeps a forwarding host's channel packets in a conntrack zone of
        their own, so a moved flow starts a new entry that NAT sees (here switched on while
        the daemon runs). The queue path keeps the LAN's flows on the channel."""
        # The daemon first, then the host starts forwarding (connection sharing switched on):
        # the routed path's zone rules come with its next device check (2 s).
        d = self.start_daemon()
        self.lan_host()
        time.sleep(2.5)
        cn, native, cp, channel = self.captures("lan")
        took = {}
        for srv in (self.srv_v4, self.srv_v6):
            out_dir = os.path.join(self.work, f"lan-{srv}")
            t0 = time.time()
            res = subprocess.run(["ip", "netns", "exec", self.LAN_NS, *self.fetch_cmd(srv, out_dir)],
                                 capture_output=True, text=True, timeout=120)
            took[srv] = time.time() - t0
            self.assert_downloaded(out_dir, res)
        lookup = subprocess.run(["ip", "netns", "exec", self.LAN_NS, "dig", "+short", "+tries=1",
                                 "+time=3", "@198.18.4.53", "open.test"],
                                capture_output=True, text=True, timeout=20)
        st = self.status()
        self.stop_captures(cn, cp)
        self.assert_clean_exit(d)
        npk, cpk = self.read_lan_captures(native, channel)
        icmp = sum(1 for p in npk if p.get("src") in {self.LAN_V4, self.LAN_V6}
                   and p.get("proto") != "udp")
        self.assertTrue(any(p.get("dns") for p in cpk), "the LAN host's lookup skipped the channel")
        for srv in (self.srv_v4, self.srv_v6):
            nat_b, ch_b, share = self.native_share(npk, cpk, srv)
            print(f"\n[LAN host, {'routed' if ROUTED else 'queue'}] {SIZE_MB} MB from {srv} in "
                  f"{took[srv]:.2f}s, native share {share:.4f} ({nat_b} native / {ch_b} channel "
                  f"bytes); lookup {lookup.stdout.strip()!r}; {icmp} other packets from the "
                  f"LAN address natively; watchdog {st['watchdog']}")
            if ROUTED:
                self.assertGreaterEqual(share, 0.95, "the LAN host's flow did not move native")
                # The watchdog saw the answers, under the router's address (the guard's
                # count of forwarded packets and the masqueraded key).
                self.assertGreaterEqual(st["watchdog"]["confirmed"], 2)
            else:
                self.assertLess(share, 0.05, "the queue path keeps LAN flows on the channel")

    def test_18b_lan_host_and_a_server_that_ignores_the_new_address(self):
        """A LAN host's moved flow to a server that drops packets from the router's native
        addresses: the watchdog must take it back to the channel (the guard counts it after
        the router's masquerade, under the router's address: before the daemon watched that
        key too, the flow stayed quiet at the bound and the fetch stalled: 35 KB in 30 s)."""
        self.lan_host()
        self.server_ignores_native_addresses()
        d = self.start_daemon()
        out_dir = os.path.join(self.work, "lan-ignore")
        t0 = time.time()
        res = subprocess.run(["ip", "netns", "exec", self.LAN_NS,
                              *self.fetch_cmd(self.srv_v4, out_dir)],
                             capture_output=True, text=True, timeout=120)
        took = time.time() - t0
        self.assert_downloaded(out_dir, res)
        st = self.status()
        print(f"\n[LAN host, server ignoring the new address] {SIZE_MB} MB in {took:.2f}s; "
              f"watchdog {st['watchdog']}")
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        if ROUTED:
            self.assertGreaterEqual(st["watchdog"]["failed_back"], 1)

    def test_18c_lan_host_chromium_and_a_deleted_table(self):
        """A LAN host's Chromium (a peer not ours) loads a 10 MB page over HTTP/3; then another
        tool deletes quicstepd's table: the daemon puts it back, the forwarding host's zone
        rules with it, and a LAN fetch moves native again, without a leak."""
        d = self.start_daemon()
        self.lan_host()
        time.sleep(2.5)  # the device check that sees the forwarding
        home, spki = self.big_page()
        cn, native, cp, channel = self.captures("lan-chromium")
        t0 = time.time()
        res = subprocess.run(
            ["ip", "netns", "exec", self.LAN_NS,
             *chromium.command(home, spki, "https://open.test/big.html", 90,
                               ["--enable-quic", "--origin-to-force-quic-on=open.test:443",
                                f"--host-resolver-rules=MAP open.test {self.srv_v4}"])],
            capture_output=True, text=True, timeout=120)
        took = time.time() - t0
        before = self.status()["healing"]["pieces"]["nft_table"]
        subprocess.run(["ip", "netns", "exec", self.client_ns, "nft", "delete", "table", "inet",
                        "quicstep"], check=True)
        deadline = time.time() + 8
        while self.status()["healing"]["pieces"]["nft_table"]["restores"] <= before["restores"]:
            self.assertLess(time.time(), deadline, "the deleted table was not put back")
            time.sleep(0.2)
        out_dir = os.path.join(self.work, "lan-after-delete")
        fetched = subprocess.run(["ip", "netns", "exec", self.LAN_NS,
                                  *self.fetch_cmd(self.srv_v4, out_dir)],
                                 capture_output=True, text=True, timeout=120)
        self.stop_captures(cn, cp)
        self.assertIn("QUICstep big page", res.stdout[-2000:], res.stderr[-2000:])
        self.assert_downloaded(out_dir, fetched)
        self.assert_clean_exit(d)
        npk, cpk = self.read_lan_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        print(f"\n[LAN host, {'routed' if ROUTED else 'queue'}] Chromium's 10 MB page in "
              f"{took:.2f}s, then the table deleted and put back, then 10 MB by gtlsclient: "
              f"native share {share:.4f} ({nat_b} native / {ch_b} channel bytes)")
        if ROUTED:  # the two flows (Chromium's, gtlsclient's after the heal) moved native
            self.assertGreaterEqual(share, 0.95)
        else:
            self.assertLess(share, 0.05)

    def test_18d_lan_host_kill9_mid_transfer(self):
        """kill -9 of quicstepd while a LAN host downloads: the LAN's rules (the routed path's
        zone chains and its moved flow's element, the queue path's forwarded chain) outlive
        the daemon as the host's own do, so the transfer completes, a new LAN connection
        takes the channel whole and nothing leaks; after --cleanup and a restart a LAN fetch
        works again (routed: natively)."""
        d = self.start_daemon()
        self.lan_host()
        time.sleep(2.5)  # the device check that sees the forwarding
        cn, native, cp, channel = self.captures("lan-kill")
        out_dir = os.path.join(self.work, "lan-kill")
        client = self.procs.start(self.LAN_NS, self.fetch_cmd(self.srv_v4, out_dir),
                                  os.path.join(self.work, "lan-kill-client.log"))

        def received():
            paths = self.status()["paths"]
            return paths["native"]["in_bytes"] + paths["channel"]["in_bytes"]
        start, deadline = received(), time.time() + 20
        while time.time() < deadline and received() - start < 1_500_000:
            time.sleep(0.02)
        mid = client.poll() is None
        self.procs.stop(d, sig=9)
        self.assertEqual(client.wait(100), 0)
        self.assert_downloaded(out_dir)
        out_dir2 = os.path.join(self.work, "lan-after-kill")
        res = subprocess.run(["ip", "netns", "exec", self.LAN_NS,
                              *self.fetch_cmd(self.srv_v4, out_dir2)],
                             capture_output=True, text=True, timeout=120)
        self.assert_downloaded(out_dir2, res)
        self.stop_captures(cn, cp)
        npk, cpk = self.read_lan_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        print(f"\n[LAN host, kill -9, {'routed' if ROUTED else 'queue'}] killed mid-transfer: "
              f"{mid}; both fetches completed; native share over both {share:.4f} ({nat_b} "
              f"native / {ch_b} channel bytes)")
        self.assertTrue(mid, "the transfer ended before the kill: no mid-transfer check")
        # The second fetch started after the kill: nothing moves it, so at least its 10 MB
        # came through the channel.
        self.assertGreaterEqual(ch_b, SIZE_MB * 900_000, "a LAN flow went native with no daemon")
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--cleanup", "--config",
                                  self.config, check=False)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(h.kernel_state(self.client_ns),
                         {"nft": False, "iptables": False, "rules": False})
        d = self.start_daemon()
        time.sleep(2.5)
        cn, native, cp, channel = self.captures("lan-restart")
        out_dir3 = os.path.join(self.work, "lan-restart")
        res = subprocess.run(["ip", "netns", "exec", self.LAN_NS,
                              *self.fetch_cmd(self.srv_v4, out_dir3)],
                             capture_output=True, text=True, timeout=120)
        self.stop_captures(cn, cp)
        self.assert_downloaded(out_dir3, res)
        self.assert_clean_exit(d)
        npk, cpk = self.read_lan_captures(native, channel)
        share = self.native_share(npk, cpk, self.srv_v4)[2]
        print(f"[LAN host, after --cleanup and a restart] native share {share:.4f}")
        if ROUTED:
            self.assertGreaterEqual(share, 0.95, "the restarted daemon did not move the flow")

    # --- a server no one here wrote -------------------------------------------------------
    def test_19_caddy_a_real_server_that_does_not_follow(self):
        """Debian's Caddy (quic-go 0.29) does not support migration: it takes the client's
        packets from the new address and keeps answering the address of the handshake (the
        provider's exit, so its answers arrive through the channel). The watchdog must bring
        each flow back to the channel, the fetches and a Chromium page load must complete,
        the destinations must then stay on the channel, and nothing may leak."""
        srv = self.lab["servers"][4]  # srv2-b: its namespace is free in this suite
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        v4, v6 = first(srv["v4"]), first(srv["v6"])
        home, spki = self.big_page()
        server = caddy.start(self.procs, srv["netns"], [v4, v6],
                             os.path.join(self.work, "htdocs"),
                             os.path.join(self.work, "key.pem"),
                             os.path.join(self.work, "cert.pem"), self.work)
        self.addCleanup(self.procs.stop, server)
        cn, native, cp, channel = self.captures("caddy")
        self.start_daemon()
        took_first = self.fetch(v4, "caddy-1")
        st1 = self.status()
        took_pinned = self.fetch(v4, "caddy-2")
        st2 = self.status()
        # Chromium over IPv6, a destination the cache does not know yet.
        t0 = time.time()
        res = lab_helpers.in_host(
            self.lab, "client",
            *chromium.command(home, spki, "https://open.test/big.html", 90,
                              ["--enable-quic", "--origin-to-force-quic-on=open.test:443",
                               f"--host-resolver-rules=MAP open.test [{v6}]"]),
            check=False, timeout=120)
        took_chromium = time.time() - t0
        st3 = self.status()
        self.stop_captures(cn, cp)
        self.assertIn("QUICstep big page", res.stdout[-2000:], res.stderr[-2000:])
        npk, cpk = self.read_captures(native, channel)
        answered_natively = [p for p in npk if p.get("src") in (v4, v6)]
        wd1, wd2, wd3 = st1["watchdog"], st2["watchdog"], st3["watchdog"]
        print(f"\n[caddy] gtlsclient 10 MB: {took_first:.2f}s moved and failed back, "
              f"{took_pinned:.2f}s pinned to the channel; Chromium over IPv6 {took_chromium:.2f}s; "
              f"to the server natively {h.quic_bytes(npk, v4) + h.quic_bytes(npk, v6)} bytes, "
              f"through the channel {h.quic_bytes(cpk, v4) + h.quic_bytes(cpk, v6)}; "
              f"watchdog {wd3}")
        # What makes this server one that does not follow: no answer on the native link.
        self.assertEqual(answered_natively[:3], [], "Caddy answered a new address natively")
        # The first flow moved, then came back; the second was kept on the channel.
        self.assertGreaterEqual(wd1["moved_native"], 1)
        self.assertGreaterEqual(wd1["failed_back"], 1)
        self.assertGreaterEqual(wd1["non_migrating_destinations"], 1)
        self.assertGreater(wd2["pinned_by_cache"], wd1["pinned_by_cache"])
        self.assertEqual(wd2["moved_native"], wd1["moved_native"], "a cached destination moved")
        # Chromium's flow to the new (IPv6) destination moved and came back the same way.
        self.assertGreater(wd3["failed_back"], wd2["failed_back"])
        self.assertGreater(wd3["non_migrating_destinations"], wd2["non_migrating_destinations"])

    def test_20_firefox_a_second_browser_and_quic_stack(self):
        """Firefox ESR (its QUIC is Mozilla's neqo, with quinn-udp's GSO and GRO) loads a
        10 MB page over HTTP/3 through the daemon, over IPv4 and IPv6: the page arrives
        whole (the server closes the stream with H3_NO_ERROR; Firefox took its screenshot
        after the load event), >= 95% of its bytes native, nothing leaks. Firefox sends its
        Initials as UDP GSO batches: through the channel their checksums need the guard's
        source rewrite (ng_channel_egress); with nft's, no handshake completed."""
        srv = self.lab["servers"][3]  # srv2-a: its namespace is free in this suite
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        v4, v6 = first(srv["v4"]), first(srv["v6"])
        work = os.path.join(self.work, "firefox")
        os.makedirs(work, exist_ok=True)
        ca, logs, servers = firefox.start_site(self.procs, srv["netns"], [v4, v6], work,
                                               SIZE_MB)
        for server in servers:
            self.addCleanup(self.procs.stop, server)
        cn, native, cp, channel = self.captures("firefox")
        self.start_daemon()
        took = {}
        for addr in (v4, v6):
            in_client = lambda *a, **k: lab_helpers.in_host(self.lab, "client", *a, **k)  # noqa: E731
            took[addr], why = firefox.load(in_client, work, ca, addr, logs[addr])
            self.assertIsNone(why)
        st = self.status()
        self.stop_captures(cn, cp)
        npk, cpk = self.read_captures(native, channel)
        for addr in (v4, v6):
            nat_b, ch_b, share = self.native_share(npk, cpk, addr)
            print(f"\n[firefox {addr}] {took[addr]:.2f}s, native share {share:.4f} "
                  f"({nat_b} native / {ch_b} channel bytes)")
            self.assertGreaterEqual(share, 0.95)
        print(f"[firefox] watchdog {st['watchdog']}")
        self.assertGreaterEqual(st["watchdog"]["confirmed"], 2)

    def test_21_udp_gso_batches_through_the_channel(self):
        """UDP GSO batches that take the channel (QUIC stacks that batch with UDP_SEGMENT:
        quinn-udp in Firefox, quic-go, msquic) reach the server whole, with good checksums:
        Initial-sized long headers (2 x 1,252 octets) and a batch of small short headers
        (3 x 60: ACKs of a flow kept on the channel), from unconnected and connected sockets,
        IPv4 and IPv6. The server's kernel counts what it got and what it threw away."""
        srv = self.lab["servers"][3]  # srv2-a
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        v4, v6 = first(srv["v4"]), first(srv["v6"])
        sink = self.procs.start(srv["netns"], ["python3", "-c", GSO_SINK, v4, v6],
                                os.path.join(self.work, "gso-sink.log"), capture_stdout=True)
        self.addCleanup(self.procs.stop, sink)
        for addr in (v4, v6):
            wait_bound(srv["netns"], "u", addr, 443, sink)
        time.sleep(0.2)
        self.assertIsNone(sink.poll(), "the sink could not bind (another server on its port?)")
        before = udp_counters(srv["netns"])
        cn, native, cp, channel = self.captures("udp-gso")
        self.start_daemon()
        res = lab_helpers.in_host(self.lab, "client", "python3", "-c", GSO_SENDER, v4, v6,
                                  check=False)
        self.stop_captures(cn, cp)
        self.assertEqual(res.returncode, 0, res.stderr)
        time.sleep(1)
        st = self.status()
        self.procs.stop(sink)
        after = udp_counters(srv["netns"])
        got = sorted(int(n) for n in sink.output.split())
        errors = {k: after[k] - before[k] for k in after}
        # From outside: at the provider the long headers (and on the routed path the short
        # ones too: flows it saw no handshake of stay on the channel), from the tunnel
        # address; on the native link no long header (read_captures checks for leaks).
        npk, cpk = self.read_captures(native, channel)
        at_provider = [p for p in cpk if p.get("dst") in (v4, v6)]
        natively = sum(1 for p in npk if p.get("dst") in (v4, v6))
        self.assertEqual(natively, 0 if ROUTED else natively)
        self.assertEqual(len(at_provider) + natively, 20)
        self.assertEqual(sum(1 for p in at_provider if p.get("ip_len", 0) > 1000), 8)
        self.assertTrue(all(p.get("src") in self.tunnel_addrs for p in at_provider))
        print(f"\n[udp gso] datagrams received by size {got}; checksum errors {errors}; "
              f"{st.get('routed', {}).get('channel_udp_source')}")
        self.assertEqual(errors, {"UdpInCsumErrors": 0, "Udp6InCsumErrors": 0})
        # Per family and socket kind: 2 long headers of 1,252 and 3 short of 60 octets.
        self.assertEqual(got, [60] * 12 + [1252] * 8)
        if ROUTED:
            source = st["routed"]["channel_udp_source"]
            self.assertTrue(source["by_guard"])
            self.assertGreaterEqual(source["gso"], 8)

    def test_22_server_preferred_address(self):
        """A server that offers a preferred address (RFC 9000 §9.6; gtlsserver
        --preferred-ipv4-addr, one server per family on srv2-a with srv2-b as the preferred
        address): once the handshake is confirmed, gtlsclient takes the connection there,
        from the same socket. The daemon sees only short headers of that flow, never its
        handshake. That server (ngtcp2 0.12.1) closes the connection after ~50 KB when the
        handshake's flow moved native before the client moved (two migrations at once). The
        daemon learns the server from the client's move (PreferredAddresses) and keeps its
        handshake flows on the channel until their client moves. The first connection per
        family may fail (it depends on whether the old flow sent a short header before the
        client moved: the routed path usually wins that race here, the queue path often
        loses it); the next two must complete, nothing leaks, and the flows to the preferred
        address go native (the server follows): >= 95% of the bytes."""
        pairs, servers = h.start_preferred_address_servers(
            self.procs, self.lab, self.work, os.path.join(self.work, "htdocs"),
            os.path.join(self.work, "key.pem"), os.path.join(self.work, "cert.pem"))
        for server in servers:
            self.addCleanup(self.procs.stop, server)
        cn, native, cp, channel = self.captures("preferred")
        self.start_daemon()
        took, first = {}, {}
        for n, (addr, _) in enumerate(pairs):
            out_dir = os.path.join(self.work, f"preferred-{n}-first")
            lab_helpers.in_host(self.lab, "client", *self.fetch_cmd(addr, out_dir), check=False,
                                timeout=120)
            got = os.path.join(out_dir, f"{SIZE_MB}M.bin")
            first[addr] = os.path.getsize(got) if os.path.exists(got) else 0
            took[addr] = [self.fetch(addr, f"preferred-{n}-{i}") for i in range(2)]
        st = self.status()
        human = h.ctl(self.client_ns, self.sock, "status").stdout
        self.stop_captures(cn, cp)
        npk, cpk = self.read_captures(native, channel)
        for addr, preferred in pairs:
            nat_b, ch_b, share = self.native_share(npk, cpk, addr, preferred)
            to_preferred = h.quic_bytes(npk, preferred) + h.quic_bytes(cpk, preferred)
            print(f"\n[preferred address {addr} -> {preferred}] first connection "
                  f"{first[addr]} bytes, then {took[addr]} s, native share "
                  f"{share:.4f} ({nat_b} native / {ch_b} channel bytes), "
                  f"{to_preferred} bytes with the preferred address; {st['preferred_address']}; "
                  f"watchdog {st['watchdog']}")
            # The client did take the preferred address: the transfers went there.
            self.assertGreaterEqual(to_preferred, 2 * SIZE_MB * 1000 * 1000)
            self.assertGreaterEqual(share, 0.95)
        self.assertEqual(st["watchdog"]["failed_back"], 0)
        # The clients' moves were seen (a first connection's too, when it gets that far: it
        # fails after it); each family's server was learnt; a move from a flow already
        # native happened only in a first connection.
        self.assertGreaterEqual(st["preferred_address"]["client_moves"], 4)
        self.assertEqual(st["preferred_address"]["destinations"], 2)
        self.assertLessEqual(st["preferred_address"]["after_move"], 2)
        self.assertIn(f"{st['preferred_address']['client_moves']} clients moved to a server's "
                      "preferred address", human)

    def test_23_version_negotiation_and_quic_v2(self):
        """Other QUIC versions with Debian's peers (ngtcp2 0.12.1 speaks v1 and the QUIC v2
        draft, 0x709a50c4, whose long-header types are numbered differently): gtlsclient
        starting in v2 draft, and one starting in a version the server does not know
        (0x1a2a3a4a) so that the server answers with Version Negotiation and the client starts
        again in v1 (the server's Version Negotiation offers no v2 draft: natively too, a
        client that insists on it gives up). Each 10 MB fetch completes, every long header of the client (v2
        Initials and Handshakes, the unknown version's Initial) goes through the channel and
        none natively, and >= 95% of the bytes go native."""
        cn, native, cp, channel = self.captures("versions")
        self.start_daemon()
        runs = {"v2draft": ["--version=v2draft"],
                "negotiated": ["--version=0x1a2a3a4a", "--preferred-versions=v1"]}
        took = {}
        for name, options in runs.items():
            out_dir = os.path.join(self.work, f"version-{name}")
            cmd = self.fetch_cmd(self.srv_v4, out_dir)
            cmd[cmd.index("--quiet") + 1:cmd.index("--quiet") + 1] = options
            t0 = time.time()
            res = lab_helpers.in_host(self.lab, "client", *cmd, check=False, timeout=120)
            took[name] = time.time() - t0
            self.assert_downloaded(out_dir, res)
        st = self.status()
        self.stop_captures(cn, cp)
        npk, cpk = self.read_captures(native, channel)  # no long header natively
        versions = {q.get("version") for p in cpk if p.get("src") in self.tunnel_addrs
                    for q in p.get("quic", []) if q.get("form") == "long"}
        nat_b, ch_b, share = self.native_share(npk, cpk, self.srv_v4)
        print(f"\n[versions] {took}; client long-header versions at the provider {versions}; "
              f"native share {share:.4f}; watchdog {st['watchdog']}")
        self.assertIn("0x709a50c4", versions)
        self.assertIn("0x1a2a3a4a", versions)
        self.assertGreaterEqual(share, 0.95)
        self.assertEqual(st["watchdog"]["failed_back"], 0)

    def test_24_dns_through_the_channel_reaches_the_providers_resolver(self):
        """A laptop's resolver is its router's or its ISP's. Through the channel a router's
        (private) address is out of reach, and an ISP's resolver answers as the censor wants.
        Here the client's resolv.conf names the ISP's resolver, which lies for blocked.test
        (qsd_helpers.ResolverLab), and quicstepd brings its channel up from a user's wg-quick
        file (a peer of its own at the provider; comments after the values) whose DNS line
        names the provider's resolver. Every query the client sends to the ISP's resolver
        (glibc's getent; dig over UDP and TCP, both families) is answered by the provider's:
        blocked.test comes back true and a 2 KB TXT whole (in fragments through the channel);
        so do IPv4 queries from sockets that name the native interface (IP_UNICAST_IF, as
        systemd-resolved's do); one bound to it (SO_BINDTODEVICE) gets nothing. The native
        link carries no DNS, the provider's capture no query to the ISP's resolver.
        With `channel_dns = []` the same query goes through the channel to the ISP's resolver
        and comes back a lie: what the client got before this redirect."""
        prov = self.lab["provider"]
        dns = h.ResolverLab(self, self.lab, self.procs, self.work)
        self.assertEqual(dns.dig(dns.isp[0], "blocked.test", "A"), [dns.LIE[0]],
                         "the ISP's resolver lies")
        tunnel = (prov["tunnel_v4"].rsplit(".", 1)[0] + ".3",
                  prov["tunnel_v6"].rsplit(":", 1)[0] + ":3")
        private, provider_public, remove_peer = h.add_provider_peer(self.lab, self.work, *tunnel)
        self.addCleanup(remove_peer)
        wg_conf = os.path.join(self.work, "user-wg0.conf")
        fd = os.open(wg_conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"[Interface]\nPrivateKey = {private}\n"
                    f"Address = {tunnel[0]}/32, {tunnel[1]}/128  # the tunnel's addresses\n"
                    f"DNS = {dns.resolver[0]}, {dns.resolver[1]}, lab.example  # the provider's\n"
                    f"MTU = 1420 # as wg-quick's default\n\n"
                    f"[Peer]\nPublicKey = {provider_public}\n"
                    f"Endpoint = {prov['v4']}:{prov['listen_port']}\n"
                    "AllowedIPs = 0.0.0.0/0, ::/0\n")

        def config(extra=""):
            return h.write_config(os.path.join(self.work, f"dns{len(extra)}.toml"), "qst-dns0",
                                  extra=f'routing_table = 51823\nwg_config = "{wg_conf}"\n'
                                        + extra)

        cn, native, cp, channel = self.captures("dns")
        d = self.start_daemon(config())
        got, big = dns.lookups()
        bound = dns.bound_lookups()
        st = self.status()
        self.assert_clean_exit(d)
        self.stop_captures(cn, cp)
        npk, cpk = self.read_captures(native, channel)  # no DNS natively
        print(f"\n[dns] {got}; TXT lengths {[len(b) for b in big.values()]}; "
              f"channel {st['channel']}")
        dns.assert_truth(self, got, big)
        self.assertEqual(st["channel"]["dns"], list(dns.resolver))
        self.assertGreaterEqual(st["channel"]["dns_redirected"], 7)
        dns.assert_channel_capture(self, cpk, tunnel)
        # systemd-resolved's sockets to a link's servers name the native interface
        # (IP_UNICAST_IF, which only UDP heeds): their queries go through the channel too, in
        # both families (the routed path: a rule gives DNS looked up through a native device
        # main's route, else IPv6 refused it at connect(), and the route chain routes it again
        # into the channel). A socket bound to the device (SO_BINDTODEVICE) gets no answer.
        # None leaks (the native capture above).
        print(f"[dns] sockets that name the native interface: {bound}")
        t = dns.truth
        self.assertEqual(bound["unicast_if udp v4"], t["v4"])
        self.assertEqual(bound["unicast_if tcp v4"], t["v4"])
        self.assertEqual(bound["unicast_if udp v6"], t["v6"])
        self.assertTrue(bound["bind udp v4"].startswith("error"), bound)
        self.assertTrue(bound["bind udp v6"].startswith("error"), bound)
        # Without the redirect: the query reaches the ISP's resolver through the channel.
        d = self.start_daemon(config("channel_dns = []\n"))
        without = dns.dig(dns.isp[0], "blocked.test", "A")
        st = self.status()
        self.assert_clean_exit(d)
        self.assertEqual(st["channel"]["dns"], [])
        self.assertEqual(without, [dns.LIE[0]])

    def test_y_channel_addresses_removed_and_added_again(self):
        """The channel device loses a tunnel address and gets it back (a VPN client
        reconfigured, a tunnel program adding its addresses one at a time), again and
        again, while long headers stream into the channel over both families: the daemon
        follows each change, and no datagram ever leaves into the channel with a source
        other than a tunnel address, not even for the instant between the new rules and the
        guard's rewrite (a provider that does not check sources would hand the server the
        client's native address in the middle of a handshake)."""
        def run(*cmd, check=True):
            return lab_helpers.in_host(self.lab, "client", *cmd, check=check)

        ifc = self.channel_if
        addrs = {}
        for fam in ("-4", "-6"):
            for line in run("ip", "-o", fam, "addr", "show", "dev", ifc, "scope",
                            "global").stdout.splitlines():
                words = line.split()
                addrs.setdefault(fam, words[words.index("inet" if fam == "-4" else "inet6") + 1])
        self.assertEqual(sorted(addrs), ["-4", "-6"], f"the channel's addresses: {addrs}")
        tunnel = [a.split("/")[0] for a in addrs.values()]
        # The kernel removes a device's IPv4 routes with its last IPv4 address; the tool that
        # adds the address again adds them too (wg-quick up). The routed path puts back its
        # own channel routes; the lab's, which the queue path uses, are put back here, as
        # that tool would.
        routes = [(fam, line.split()) for fam in ("-4", "-6") for line in run(
            "ip", fam, "route", "show", "table", "all", "dev", ifc).stdout.splitlines()
            if line.startswith("default")]
        self.addCleanup(lambda: [run("ip", fam, "route", "replace", *words, "dev", ifc,
                                     check=False) for fam, words in routes])

        def tx_packets():
            import json
            return json.loads(run("ip", "-s", "-j", "link", "show", ifc).stdout)[0][
                "stats64"]["tx"]["packets"]

        self.start_daemon()
        foreign = os.path.join(self.work, "readdress-foreign-source.pcap")
        cap = h.start_capture(self.procs, self.client_ns, ifc, foreign,
                              f"udp and not src host {tunnel[0]} and not src host {tunnel[1]}")
        tx0 = tx_packets()
        flood = self.procs.start(self.client_ns, ["python3", "-c", LONG_HEADER_FLOOD,
                                                  self.srv_v4, self.srv_v6],
                                 os.path.join(self.work, "readdress-flood.log"))
        cycles = 6
        for cycle in range(cycles):
            for fam, cidr in addrs.items():
                for op in ("del", "add"):
                    before = self.status()["daemon"]["channel_readdressed"]
                    extra = ["nodad"] if fam == "-6" and op == "add" else []
                    run("ip", fam, "addr", op, cidr, "dev", ifc, *extra)
                    if op == "add":
                        for f, words in routes:
                            run("ip", f, "route", "replace", *words, "dev", ifc)
                    deadline = time.time() + 10
                    while self.status()["daemon"]["channel_readdressed"] <= before:
                        self.assertLess(time.time(), deadline,
                                        f"cycle {cycle}: the daemon did not follow "
                                        f"'ip {fam} addr {op} {cidr}'")
                        time.sleep(0.05)
                    time.sleep(0.1)
        self.assertIsNone(flood.poll(), "the sender died")
        self.procs.stop(flood)
        tx = tx_packets() - tx0
        with open(os.path.join(self.work, "readdress-flood.log")) as f:
            sent = int(f.read().split()[-1])
        self.stop_captures(cap)
        self.assert_complete(foreign)
        bad = h.inspect(foreign)
        print(f"\n[channel readdressed {4 * cycles}x] {sent} long headers sent, {tx} packets "
              f"left into the channel; {len(bad)} with a foreign source")
        self.assertGreater(tx, sent // 2, "the long headers did not take the channel")
        if os.environ.get("QSD_ADDRESSING") == "nat":
            # Without an IPv6 address on the interface, masquerade gives the native one: the
            # check after it drops those, and the status counts them.
            dropped = self.status()["kernel"].get("channel_foreign_source", {})
            print(f"[channel readdressed, nat] dropped after masquerade: {dropped}")
            self.assertGreater(dropped.get("packets", 0), 0,
                               "no foreign source was dropped (nor counted) after masquerade")
        self.assertEqual([(p.get("src"), p.get("dst")) for p in bad[:5]], [],
                         f"{len(bad)} datagrams left into the channel with a source that is "
                         "not a tunnel address")

    def test_y2_ruleset_flushed_no_native_source_into_the_channel(self):
        """Another tool flushes the ruleset, five times, while TCP connections and long
        headers stream into the channel: no packet enters the channel with a source other
        than a tunnel address until the daemon has put its tables back. On the routed path
        the ip rules still send TCP to the channel, and nothing rewrote its source there
        until the guard's channel program dropped such packets (11,212 in one run, every one
        of which would have entered with the native source); it rewrites UDP's. On the
        queue path the channel's packets lose their marks with the table and none enter."""
        def run(*cmd, check=True):
            return lab_helpers.in_host(self.lab, "client", *cmd, check=check)

        ifc = self.channel_if
        tunnel = [self.lab["client"]["channel"]["v4"], self.lab["client"]["channel"]["v6"]]
        self.start_daemon()
        foreign = os.path.join(self.work, "flush-foreign-source.pcap")
        cap = h.start_capture(self.procs, self.client_ns, ifc, foreign,
                              f"(tcp or udp) and (dst host {self.srv_v4} or dst host "
                              f"{self.srv_v6}) and not src host {tunnel[0]} and not src host "
                              f"{tunnel[1]}")
        senders = [self.procs.start(self.client_ns, ["python3", "-c", code, self.srv_v4,
                                                     self.srv_v6],
                                    os.path.join(self.work, f"flush-{name}.log"))
                   for name, code in (("udp", LONG_HEADER_FLOOD), ("tcp", TCP_CONNECTS))]
        time.sleep(0.5)
        for flush in range(5):
            before = self.status()["healing"]["pieces"]["nft_table"]["restores"]
            run("nft", "flush", "ruleset")
            deadline = time.time() + 10
            while self.status()["healing"]["pieces"]["nft_table"]["restores"] <= before:
                self.assertLess(time.time(), deadline, f"flush {flush}: the table not restored")
                time.sleep(0.05)
            time.sleep(0.3)
        for p in senders:
            self.assertIsNone(p.poll(), "a sender died")
            self.procs.stop(p)
        st = self.status()
        self.stop_captures(cap)
        self.assert_complete(foreign)
        bad = h.inspect(foreign)
        dropped = st.get("routed", {}).get("channel_udp_source", {}).get("foreign_dropped")
        print(f"\n[ruleset flushed 5x] {dropped} packets with a foreign source dropped by the "
              f"guard on the channel device; {len(bad)} entered the channel")
        self.assertEqual([(p.get("proto"), p.get("src")) for p in bad[:5]], [],
                         f"{len(bad)} packets entered the channel with a foreign source")
        if ROUTED:
            self.assertGreater(dropped, 0, "no flush met the stream: the test proved nothing")

    def test_y3_ruleset_flushed_and_guard_detached_together(self):
        """The double fault: another tool detaches the guard from the native device and
        flushes the ruleset at once, five times within seconds (so that the later restores
        back off, as against a tool that keeps removing them), while long headers stream to
        the server's port 443. Either piece alone keeps a handshake off the native path;
        without both, the host's own QUIC took the main table with nothing to drop it, for
        as long as the restores backed off (24,201 of 32,932 long headers left natively).
        Now the guard is put back first in each turn, and while the table stays missing the
        host's QUIC goes to the channel's table by port: what may still leave is what was
        sent between a fault and the daemon's next turn (9 of 33,580 in five faults), never
        later than 200 ms after a fault (tests/results/2026-12-06-double-fault.md)."""
        if not ROUTED:
            self.skipTest("the guard and the QUIC mark are the routed path's")

        def run(*cmd, check=True):
            return lab_helpers.in_host(self.lab, "client", *cmd, check=check)

        native_if = self.lab["client"]["native"]["interface"]
        self.start_daemon()
        pcap = os.path.join(self.work, "double-fault-native.pcap")
        cap = h.start_capture(self.procs, self.client_ns, native_if, pcap,
                              "udp and dst port 443 and (udp[8] & 0x80) != 0")
        flood = self.procs.start(self.client_ns, ["python3", "-c", LONG_HEADER_FLOOD,
                                                  self.srv_v4],
                                 os.path.join(self.work, "double-fault-flood.log"))
        time.sleep(0.5)
        faults = []
        for fault in range(5):
            pieces = self.status()["healing"]["pieces"]
            before = pieces["nft_table"]["restores"]
            faults.append(time.time())  # the fault's start (each command takes milliseconds)
            self.assertGreater(qs_quicstepd.detach_guard(native_if), 0, "no guard link to detach")
            run("nft", "flush", "ruleset")
            deadline = time.time() + 15
            while True:
                pieces = self.status()["healing"]["pieces"]
                if (pieces["nft_table"]["restores"] > before
                        and pieces["native_guard"]["state"] == "ok"):
                    break
                self.assertLess(time.time(), deadline,
                                f"fault {fault}: not restored: {pieces}")
                time.sleep(0.02)
            time.sleep(0.3)
        self.assertIsNone(flood.poll(), "the sender died")
        self.procs.stop(flood)
        self.stop_captures(cap)
        self.assert_complete(pcap)
        with open(os.path.join(self.work, "double-fault-flood.log")) as f:
            sent = int(f.read().split()[-1])
        # (The capture keeps only long headers: the sender's are not parseable QUIC.)
        leaked = [p for p in h.inspect(pcap) if p.get("dst") == self.srv_v4]
        late = [p for p in leaked
                if p["time"] - max((t for t in faults if t <= p["time"]), default=0) > 0.2]
        backed_off = self.status()["healing"]["pieces"]["nft_table"]["contested"]
        print(f"\n[double fault x5] {sent} long headers sent, {len(leaked)} left natively, "
              f"{len(late)} of them more than 200 ms from a fault; the table's restores "
              f"backed off {backed_off} time(s)")
        self.assertGreater(backed_off, 0, "no restore backed off: the test proved less")
        self.assertEqual([p["time"] for p in late[:5]], [],
                         f"{len(late)} long headers left natively more than 200 ms after a "
                         "fault (with the table missing)")
        # Not broken afterwards: the fail-closed rules are gone with the table back, and a
        # new connection's download comes on the native path again.
        before = self.status()["paths"]["native"]["in_bytes"]
        self.fetch(self.srv_v4, "after-double-fault")
        gained = self.status()["paths"]["native"]["in_bytes"] - before
        self.assertGreater(gained, SIZE_MB * 1000 * 1000 // 2,
                           f"only {gained} bytes came natively after the faults")

    def test_z_channel_device_recreated(self):
        """Another tool deletes and re-creates the WireGuard device under the running daemon,
        with a new tunnel address (the provider now accepts only that one): the daemon
        notices within seconds, reads the new address and installs its rules again; a new
        connection's handshake reaches the provider from the new address, its data goes
        native, nothing leaks. (On this kernel the netdev chains re-bind to a new device of
        the same name by themselves; the stale tunnel address is what would stop traffic.)
        Runs last: it replaces the lab's channel device for the rest of the class."""
        def run(*cmd, check=True):
            return lab_helpers.in_host(self.lab, "client", *cmd, check=check)

        ifc = self.channel_if
        d = self.start_daemon()
        self.fetch(self.srv_v4, "before-recreate")
        conf = run("wg", "showconf", ifc).stdout
        routes = [(fam, line.split()) for fam in ("-4", "-6") for line in run(
            "ip", fam, "route", "show", "table", "all", "dev", ifc).stdout.splitlines()
            if line.startswith("default")]
        self.assertTrue(routes, "the lab's channel table has no default route")
        before = self.status()["daemon"].get("channel_recreated", 0)
        old_wg = lab_helpers.lab_daemon_pid("wireguard-go-client")
        run("ip", "link", "del", ifc)
        # The lab's wireguard-go exits once it sees its device gone; until then it holds the
        # interface's UAPI socket, and a second wireguard-go for the same name refuses to
        # start ("unix socket in use") — under load that took longer than a fixed pause.
        deadline = time.time() + 20
        while old_wg and lab_helpers.pid_alive(old_wg):
            self.assertLess(time.time(), deadline,
                            f"the lab's wireguard-go (pid {old_wg}) still runs 20 s after its "
                            "device was deleted")
            time.sleep(0.05)
        # The replacement lives until the class ends (later tests, the lab's teardown). Its
        # start is the test's setup, not what it tests: a wireguard-go whose fresh UAPI socket
        # vanished before it listened on it ("Failed to listen on uapi socket: no such file or
        # directory", seen once in a flake hunt under load) is started again, twice at most.
        for attempt in range(3):
            log = os.path.join(self.work, f"wireguard-go-again-{attempt}.log")
            wg = self.procs.start(self.client_ns, ["wireguard-go", "-f", ifc], log)
            deadline = time.time() + 20
            while (run("ip", "link", "show", ifc, check=False).returncode != 0
                   and wg.poll() is None and time.time() < deadline):
                time.sleep(0.1)
            if wg.poll() is None and time.time() < deadline:
                break
            with open(log) as f:
                text = f.read()
            socket_dir = os.listdir("/var/run/wireguard") if os.path.isdir(
                "/var/run/wireguard") else "missing"
            if attempt == 2 or "uapi socket" not in text:
                self.fail(f"wireguard-go did not create the device (attempt {attempt + 1}, exit "
                          f"{wg.poll()}; the lab's old wireguard-go pid {old_wg}, alive "
                          f"{bool(old_wg) and lab_helpers.pid_alive(old_wg)}; "
                          f"/var/run/wireguard: {socket_dir}; log: {text[-1500:]})")
            print(f"\n  wireguard-go again, attempt {attempt + 1} failed: {text.strip()[-200:]};"
                  f" /var/run/wireguard: {socket_dir}", flush=True)
            self.procs.stop(wg)
        conf_path = os.path.join(self.work, "channel-again.conf")
        with open(conf_path, "w") as f:
            f.write(conf)
        run("wg", "setconf", ifc, conf_path)
        run("sysctl", "-qw", f"net.ipv6.conf.{ifc}.router_solicitations=0")
        # A new tunnel address in the channel's subnets; the provider accepts only it now.
        new_v4 = self.lab["client"]["channel"]["v4"].rsplit(".", 1)[0] + ".3"
        new_v6 = self.lab["client"]["channel"]["v6"].rsplit(":", 1)[0] + ":3"
        prov = lambda *cmd: lab_helpers.in_host(self.lab, "provider", *cmd)  # noqa: E731
        peer = prov("wg", "show", self.prov_if, "peers").stdout.split()[0]
        prov("wg", "set", self.prov_if, "peer", peer, "allowed-ips", f"{new_v4}/32,{new_v6}/128")
        run("ip", "addr", "add", f"{new_v4}/32", "dev", ifc)
        run("ip", "-6", "addr", "add", f"{new_v6}/128", "dev", ifc, "nodad")
        run("ip", "link", "set", ifc, "up")
        for fam, words in routes:
            run("ip", fam, "route", "replace", *words, "dev", ifc)
        deadline = time.time() + 8
        while self.status()["daemon"].get("channel_recreated", 0) <= before:
            self.assertLess(time.time(), deadline, "the daemon did not notice the new device")
            time.sleep(0.2)
        cn, native, cp, channel = self.captures("recreated")
        took = self.fetch(self.srv_v4, "after-recreate")
        took_v6 = self.fetch(self.srv_v6, "after-recreate-v6")
        self.stop_captures(cn, cp)
        readdressed = self.status()["daemon"].get("channel_readdressed", 0)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        npk, cpk = self.read_captures(native, channel)
        for srv, new_src, t in ((self.srv_v4, new_v4, took), (self.srv_v6, new_v6, took_v6)):
            nat_b, ch_b, share = self.native_share(npk, cpk, srv)
            initials = [p for p in cpk if p.get("dst") == srv and any(
                q.get("type") == "initial" for q in p.get("quic", []))]
            print(f"\n[channel re-created] fetch from {srv} {t:.2f}s, native share {share:.4f}; "
                  f"{len(initials)} Initials at the provider; addresses followed {readdressed}x "
                  "after the device")
            # IPv6 too: the addresses come one at a time after the device, and the daemon
            # follows each (follow_channel_addresses), not only what the device had at first.
            self.assertTrue(initials and all(p["src"] == new_src for p in initials),
                            f"the handshake to {srv} did not reach the provider from the new "
                            "tunnel address")
            self.assertGreaterEqual(share, 0.95)


if __name__ == "__main__":
    unittest.main()
