"""Lab tests of censord (lab/censor/): the default censor blocks native QUIC and TCP fetches
of blocked.test and lets open.test through; it forges DNS answers; the GFW-faithful mode
misses Chromium's two-datagram ClientHello; the strict modes block what they say;
--block-wireguard breaks a new WireGuard session on the lab's channel and nothing else. Proofs
come from the clients' results and packet captures; the decision log says which rule fired.

Root, the shared lab namespaces (waits while another test or engineer uses them), ~2 min."""
import os
import shutil
import signal
import subprocess
import time
import unittest

from qs_support import artifacts, tun_engine
from tests.censor.censor_helpers import (Procs, WORK, censor_lab, chromium_fetch, curl_fetch, dig,
                            gtlsclient_fetch, lab_helpers, make_site, wait_lab_idle, wait_listening)

CLIENT_NS, SRV_NS = "qs-client", "qs-srv1"


def rules_of(name):
    return [d for d in censor_lab.decisions() if d["rule"] == name]


class CensorLab(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        lab_helpers.require_root(cls)
        censor_lab.stop()  # a censord left by an interrupted run (by its recorded PID)
        wait_lab_idle()
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.procs = Procs()
        lab_helpers.qslab("up", timeout=180)
        try:
            cls.lab = lab_helpers.status()
            cls.htdocs, key, cert, cls.spki = make_site(WORK)
            cls.quic = cls.procs.start(SRV_NS, ["gtlsserver", "--quiet", f"--htdocs={cls.htdocs}", "*", "443",
                                                key, cert], os.path.join(WORK, "gtlsserver.log"))
            cls.tls = cls.procs.start(SRV_NS, ["openssl", "s_server", "-accept", "443", "-cert", cert, "-key",
                                               key, "-www", "-quiet"], os.path.join(WORK, "s_server.log"))
            wait_listening(SRV_NS, "u", 443, cls.quic)
            wait_listening(SRV_NS, "t", 443, cls.tls)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        censor_lab.stop()
        cls.procs.stop_all()
        lab_helpers.down(cls.any_failed)
        artifacts.finish(WORK, cls.any_failed)

    def tearDown(self):
        rc = censor_lab.stop()
        self.assertIn(rc, (0, None), "censord did not exit cleanly on SIGTERM")

    # --- helpers ---

    def start_censor(self, *args):
        censor_lab.start(list(args))

    def capture(self, netns, iface, bpf):
        path = os.path.join(WORK, f"{self.id().split('.')[-1]}-{netns}.pcap")
        p = self.procs.start(netns, ["tcpdump", "-i", iface, "-n", "-U", "--immediate-mode", "-s", "0", "-w", path, bpf],
                             path + ".log")
        deadline = time.time() + 10
        while time.time() < deadline:
            with open(path + ".log") as f:
                if "listening on" in f.read():
                    return p, path
            time.sleep(0.05)
        raise AssertionError("tcpdump did not start")

    def packets(self, proc, path, bpf=""):
        time.sleep(0.5)
        self.procs.stop(proc, signal.SIGINT)
        out = subprocess.run(["tcpdump", "-n", "-r", path, *([bpf] if bpf else [])],
                             capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if line.strip()]

    def chromium_quic(self, name, host, timeout=12):
        return chromium_fetch(WORK, name, f"https://{host}/", self.spki,
                              ["--enable-quic", f"--origin-to-force-quic-on={host}:443",
                               f"--host-resolver-rules=MAP {host} 198.18.10.11"], timeout=timeout)

    # --- the default censor ---

    def test_dns_forgery(self):
        self.start_censor()
        self.assertEqual(dig("blocked.test", "A"), ["198.18.0.255"])
        self.assertEqual(dig("www.blocked.test", "AAAA"), ["2001:db8::dead"])
        self.assertEqual(dig("open.test", "A"), ["198.18.10.10"])
        forged = rules_of("dns_name")
        self.assertEqual(sorted(d["name"] for d in forged), ["blocked.test", "www.blocked.test"])
        self.assertTrue(all(d["action"] == "pass_and_inject" for d in forged))
        self.assertEqual(censor_lab.fresh_stats()["dns_forged"], 2)

    def test_quic_blocked_open_passes_and_residual(self):
        self.start_censor()
        ok, secs = gtlsclient_fetch(WORK, "open", "open.test")
        self.assertTrue(ok, "native QUIC to open.test must pass the censor")
        cap, path = self.capture(CLIENT_NS, "to-censor", "udp port 443")
        srv_cap, srv_path = self.capture(SRV_NS, "to-inet", "udp port 443 and host 198.18.10.11")
        ok, secs, _ = self.chromium_quic("blocked", "blocked.test")
        self.assertFalse(ok, "native QUIC to blocked.test must fail")
        from_server = self.packets(cap, path, "src host 198.18.10.11")
        at_server = self.packets(srv_cap, srv_path, "dst host 198.18.10.11")
        # Chromium's ClientHello spans two Initials: the first passes, the second (with the
        # SNI) is dropped, and nothing of the flow comes back.
        self.assertEqual(from_server, [], "no server packet may reach the client")
        self.assertLessEqual(len(at_server), 1, "only the first Initial reaches the server")
        blocks = rules_of("quic_sni")
        self.assertEqual(len(blocks), 1)
        self.assertEqual((blocks[0]["name"], blocks[0]["flow"]["server"]), ("blocked.test", "198.18.10.11"))
        # The triple stays blocked whatever the SNI: gtlsclient to the address sends "localhost".
        ok, _ = gtlsclient_fetch(WORK, "residual", "198.18.10.11", timeout=4)
        self.assertFalse(ok, "residual blocking must block the triple")
        self.assertGreaterEqual(len(rules_of("residual")), 1)
        # open.test (another server address) still works.
        ok, _ = gtlsclient_fetch(WORK, "open-after", "open.test")
        self.assertTrue(ok)

    def test_tcp_blocked_by_rst_open_passes(self):
        self.start_censor()
        ok, rc, err = curl_fetch("open.test")
        self.assertTrue(ok, f"HTTPS over TCP to open.test must pass: {rc} {err}")
        cap, path = self.capture(CLIENT_NS, "to-censor", "tcp port 443")
        ok, rc, err = curl_fetch("blocked.test", resolve="198.18.10.11")
        resets = self.packets(cap, path, "src host 198.18.10.11 and tcp[tcpflags] & tcp-rst != 0")
        self.assertFalse(ok, "HTTPS over TCP to blocked.test must fail")
        self.assertIn(rc, (35, 56), f"curl should see a reset: {rc} {err}")
        self.assertGreaterEqual(len(resets), 1, "an injected RST from the server's address")
        blocks = rules_of("tcp_sni")
        self.assertEqual(len(blocks), 1)
        self.assertEqual(blocks[0]["action"], "drop_and_inject")

    def test_gtlsclient_by_name_without_dns_forgery(self):
        # With no DNS forgery the name resolves to the real address: the SNI alone blocks.
        self.start_censor("--no-dns-forgery")
        ok, _ = gtlsclient_fetch(WORK, "gtls-blocked", "blocked.test", timeout=5)
        self.assertFalse(ok)
        self.assertEqual([d["name"] for d in rules_of("quic_sni")], ["blocked.test"])

    # --- the GFW-faithful mode and the strict modes ---

    def test_first_datagram_only_misses_chromium(self):
        self.start_censor("--first-datagram-only", "--no-dns-forgery")
        ok, secs, _ = self.chromium_quic("gfw", "blocked.test", timeout=20)
        self.assertTrue(ok, "the first Initial alone has no SNI: Chromium gets through")
        self.assertEqual(rules_of("quic_sni"), [])
        ok, _ = gtlsclient_fetch(WORK, "gfw-gtls", "blocked.test", timeout=5)
        self.assertFalse(ok, "gtlsclient's ClientHello fits in one Initial: blocked")
        self.assertEqual(len(rules_of("quic_sni")), 1)

    def test_strict_all_quic(self):
        self.start_censor("--strict-all-quic")
        ok, _ = gtlsclient_fetch(WORK, "strict-open", "open.test", timeout=4)
        self.assertFalse(ok, "every QUIC flow is blocked")
        ok, rc, err = curl_fetch("open.test")
        self.assertTrue(ok, f"TCP is not QUIC: {rc} {err}")
        self.assertGreaterEqual(len(rules_of("strict_all_quic")), 1)

    def test_strict_short_header(self):
        self.start_censor("--strict-short-header")
        ok, _ = gtlsclient_fetch(WORK, "short-open", "open.test")
        self.assertTrue(ok, "a flow that starts with an Initial is not touched")
        srv_cap, srv_path = self.capture(SRV_NS, "to-inet", "udp dst port 443 and src port 40443")
        in_ns = ["ip", "netns", "exec", CLIENT_NS, "python3", "-c",
                 "import socket,time\n"
                 "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                 "s.bind(('0.0.0.0',40443))\n"
                 "for i in range(3):\n"
                 "  s.sendto(bytes([0x41])+bytes(40),('198.18.10.10',443)); time.sleep(0.05)\n"]
        subprocess.run(in_ns, check=True, timeout=10)
        arrived = self.packets(srv_cap, srv_path)
        self.assertEqual(arrived, [], "a flow whose first packet is a short header is dropped")
        self.assertEqual(len(rules_of("strict_short_header")), 1)

    # --- WireGuard blocked by its fingerprint ---

    def renew_channel_session(self):
        """The lab channel's peer removed and put back as it was: its next packet starts a new
        WireGuard handshake (a censor that came up after the session began sees one)."""
        c = self.lab["client"]
        ns, iface = c["netns"], c["channel"]["interface"]
        pub, again = tun_engine.peer_setting(self.lab, WORK)
        subprocess.run(["ip", "netns", "exec", ns, "wg", "set", iface, "peer", pub, "remove"],
                       check=True)
        subprocess.run(["ip", "netns", "exec", ns, "wg", "set", iface, *again], check=True)

    def lookup_through_channel(self, seconds):
        """Whether a lookup sourced from the tunnel address (the lab's rule sends it into the
        channel) is answered within `seconds`, retried each 2 s."""
        c = self.lab["client"]
        deadline = time.time() + seconds
        while time.time() < deadline:
            res = subprocess.run(["ip", "netns", "exec", c["netns"], "dig", "+short", "+time=2",
                                  "+tries=1", "-b", c["channel"]["v4"], "open.test",
                                  f"@{c['resolvers'][0]}"], capture_output=True, text=True,
                                 timeout=15)
            # +short prints the answer's addresses — and, on a timeout, dig's complaint
            # (";; communications error ..."), also on stdout.
            if any(line and line[0].isdigit() for line in res.stdout.splitlines()):
                return True
        return False

    def test_block_wireguard(self):
        # The default censor leaves WireGuard alone: a new session comes up.
        self.start_censor()
        self.renew_channel_session()
        self.assertTrue(self.lookup_through_channel(15), "the channel did not work uncensored")
        self.assertEqual(rules_of("wireguard"), [])
        self.assertEqual(censor_lab.stop(), 0)
        # With --block-wireguard the new session's handshake is dropped, and with it the flow.
        self.start_censor("--block-wireguard")
        self.renew_channel_session()
        self.assertFalse(self.lookup_through_channel(8), "a lookup crossed a blocked channel")
        self.assertGreaterEqual(len(rules_of("wireguard")), 1)
        self.assertGreaterEqual(censor_lab.fresh_stats()["wireguard_blocks"], 1)
        ok, _ = gtlsclient_fetch(WORK, "wg-open", "open.test")
        self.assertTrue(ok, "QUIC outside the channel is not WireGuard")
        # The censor gone (it fails open), WireGuard's handshake retries bring it back.
        self.assertEqual(censor_lab.stop(), 0)
        self.assertTrue(self.lookup_through_channel(20), "the channel did not come back")

    # --- fail-open and clean stop ---

    def test_stop_removes_rules_and_fails_open(self):
        self.start_censor()
        self.assertEqual(censor_lab.stop(), 0)
        listing = subprocess.run(["ip", "netns", "exec", "qs-censor", "iptables-nft-save"],
                                 capture_output=True, text=True).stdout
        self.assertNotIn("QS_CENSOR", listing)
        ok, rc, err = curl_fetch("blocked.test", resolve="198.18.10.11")
        self.assertTrue(ok, f"no censor, no censorship: {rc} {err}")


if __name__ == "__main__":
    unittest.main()
