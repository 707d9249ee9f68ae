"""chromium-headless-shell against quicstep-server, one run per migration behaviour (root,
throwaway namespaces of srvt_env).

Each run: Chromium (QUIC forced, qs_support/chromium.py command line) loads a page whose
script fetches BODY bytes over the same HTTP/3 connection (a synchronous XHR: the DOM says
how many bytes arrived). Once several MB have left the server, the client namespace rebinds
Chromium's connection like a NAT: an nft rule (stateless, so Chromium does not notice)
rewrites the source port of its packets to REBIND_PORT, and the destination port of the
answers back. The outcome is checked from outside: the DOM, the server's counters and a
capture on the server's interface from before Chromium starts (which client ports the
server sent to after the change, by the packets' time stamps).

  full, port-only: the server validates the new port and sends there; the whole body arrives.
  stale-path:      the server keeps answering the original port (nothing to the new one).
  none:            the server ignores packets from the new port (policy_ignored > 0) and
                   sends nothing there; the connection stalls.

Run (from the repository's root; QS_BUILD names the build, default build/release):
     python3 -m unittest -v tests.server_testbed.test_server_chromium
"""
import json
import os
import re
import subprocess
import time
import unittest

from qs_support import artifacts, binaries, captures, chromium
from server_testbed.bench import srvt_env as env

SERVER = binaries.path("quicstep-server", required=False) or ""
BODY = 24_000_000           # 2.4 s at the testbed's 80 Mbit/s
REBIND_AFTER = 6_000_000    # server bytes sent before the rebinding
REBIND_PORT = 40999
PAGE_TIMEOUT = 25


def skip_reason():
    if os.geteuid() != 0:
        return "needs root"
    if not SERVER or not os.path.exists(SERVER):
        return "quicstep-server is not built (QS_BUILD: the build directory)"
    try:
        chromium.binary()
    except RuntimeError as e:
        return str(e)
    for tool in ("nft", "tcpdump"):
        if not env.shutil.which(tool):
            return f"{tool} missing"
    return None


def server_tx_bytes():
    link = json.loads(env.sh("ip", "-n", env.NS_S, "-s", "-j", "link", "show", "dev",
                             env.IF_S).stdout)[0]
    return link["stats64"]["tx"]["bytes"]


def chromium_port():
    """The local port of Chromium's UDP socket to the server, or None."""
    out = env.netns(env.NS_C, "ss", "-Hnua", "dst", f"{env.S4}:443").stdout.split()
    for field in out:
        if field.startswith(env.C4[0] + ":"):
            return int(field.rsplit(":", 1)[1])
    return None


def rebind(port):
    """Stateless NAT rebinding in the client namespace: port -> REBIND_PORT on the way out,
    back on the way in (before the socket lookup)."""
    rules = f"""table ip qs_srvt_rebind {{
  chain out {{ type filter hook output priority -300;
    ip daddr {env.S4} udp sport {port} udp dport 443 udp sport set {REBIND_PORT}; }}
  chain in {{ type filter hook prerouting priority -300;
    ip saddr {env.S4} udp sport 443 udp dport {REBIND_PORT} udp dport set {port}; }}
}}
"""
    subprocess.run(["ip", "netns", "exec", env.NS_C, "nft", "-f", "-"], input=rules, text=True,
                   check=True, capture_output=True)


def capture_ports(pcap, old_port, since):
    """(server packets to the old port after the rebinding, to the new port, client packets
    from the new port) read from the capture, counting only packets stamped at or after
    `since` (the rebinding's time.time(); tcpdump -tt stamps on the same clock)."""
    out = env.sh("tcpdump", "-tt", "-nn", "-r", pcap, "udp", check=False).stdout
    to_old = to_new = from_new = 0
    for line in out.splitlines():
        stamp = line.split(" ", 1)[0]
        if not re.fullmatch(r"\d+\.\d+", stamp) or float(stamp) < since:
            continue
        if f"{env.S4}.443 > {env.C4[0]}.{old_port}:" in line:
            to_old += 1
        elif f"{env.S4}.443 > {env.C4[0]}.{REBIND_PORT}:" in line:
            to_new += 1
        elif f"{env.C4[0]}.{REBIND_PORT} > {env.S4}.443:" in line:
            from_new += 1
    return to_old, to_new, from_new


@unittest.skipIf(skip_reason(), skip_reason())
class ChromiumRebinding(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = env.tempdir()
        env.up()
        cls.cert, cls.key = env.make_cert(cls.work)
        cls.spki = env.spki_hash(cls.cert)
        cls.htdocs = os.path.join(cls.work, "htdocs")
        os.makedirs(cls.htdocs)
        with open(os.path.join(cls.htdocs, "index.html"), "w") as f:
            f.write("<html><body><p>served by quicstep-server</p><script>"
                    "var x = new XMLHttpRequest();"
                    f"x.open('GET', '/bytes/{BODY}', false);"
                    "x.overrideMimeType('text/plain; charset=x-user-defined'); x.send();"
                    "document.write('<p>body bytes: ' + x.responseText.length + '</p>');"
                    "</script></body></html>\n")

    @classmethod
    def tearDownClass(cls):
        env.down()
        artifacts.finish(cls.work, cls.any_failed)

    def load_with_rebinding(self, behaviour):
        """Returns (DOM, server counters, capture counts, Chromium's original port)."""
        env.netns(env.NS_C, "nft", "delete", "table", "ip", "qs_srvt_rebind", check=False)
        server = env.Server(SERVER, self.work, self.cert, self.key, "--workers", "2",
                            "--htdocs", self.htdocs, "--migration", behaviour)
        home = os.path.join(self.work, f"home-{behaviour}")
        os.makedirs(home, exist_ok=True)
        pcap = os.path.join(self.work, f"{behaviour}.pcap")
        cmd = chromium.command(home, self.spki, "https://blocked.test/index.html",
                                     PAGE_TIMEOUT, ("--enable-quic",
                                                    "--origin-to-force-quic-on=blocked.test:443",
                                                    f"--host-resolver-rules=MAP blocked.test {env.S4}"))
        # The capture runs from before Chromium starts and is known to listen: a capture
        # started at the rebinding can come up after the rest of the body has gone (under
        # load it did, once: nothing counted although the server validated the new path).
        with open(pcap + ".log", "w") as log:  # tcpdump keeps its own descriptor
            dump = subprocess.Popen(["ip", "netns", "exec", env.NS_S, "tcpdump", "-i",
                                     env.IF_S, "-s", "96", "-U", "-w", pcap, "udp"],
                                    stdout=subprocess.DEVNULL, stderr=log)
        if not captures.started(pcap):
            dump.terminate()
            dump.wait(timeout=5)
            raise AssertionError("tcpdump on the server's link did not start")
        tx0 = server_tx_bytes()
        chrome = subprocess.Popen(["ip", "netns", "exec", env.NS_C, *cmd],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = None
        rebound_at = float("inf")
        try:
            deadline = time.time() + PAGE_TIMEOUT
            while time.time() < deadline and server_tx_bytes() - tx0 < REBIND_AFTER:
                time.sleep(0.02)
            port = chromium_port()
            self.assertIsNotNone(port, "Chromium's UDP socket not found (transfer not started)")
            rebound_at = time.time()
            rebind(port)
            dom = chrome.communicate(timeout=PAGE_TIMEOUT + 15)[0]
        finally:
            if chrome.poll() is None:
                chrome.kill()
                chrome.wait()
            time.sleep(0.2)
            dump.terminate()
            dump.wait(timeout=5)
            env.netns(env.NS_C, "nft", "delete", "table", "ip", "qs_srvt_rebind", check=False)
            stats = server.stop()
        counts = capture_ports(pcap, port, rebound_at)
        body = re.findall(r"body bytes: (\d+)", dom)
        print(f"\n  {behaviour}: body {body[-1] + ' bytes' if body else 'failed (no result)'};"
              f" after the rebinding, server -> old port {counts[0]}, -> new port {counts[1]},"
              f" client from new port {counts[2]}; path_validated"
              f" {env.total(stats, 'path_validated')}, policy_ignored"
              f" {env.total(stats, 'policy_ignored')}, handshakes {env.total(stats, 'handshakes')}",
              flush=True)
        return dom, stats, counts, port

    def check_page_and_body(self, dom, complete):
        self.assertIn("served by quicstep-server", dom)  # the page itself came over HTTP/3
        if complete:
            self.assertIn(f"body bytes: {BODY}", dom)
        else:
            self.assertNotIn(f"body bytes: {BODY}", dom)

    def test_full_follows_the_rebinding(self):
        dom, stats, (to_old, to_new, from_new), _ = self.load_with_rebinding("full")
        self.check_page_and_body(dom, True)
        self.assertGreater(from_new, 0)
        self.assertGreater(to_new, 0)
        self.assertGreaterEqual(env.total(stats, "path_validated"), 1)

    def test_port_only_follows_a_port_change(self):
        dom, stats, (to_old, to_new, from_new), _ = self.load_with_rebinding("port-only")
        self.check_page_and_body(dom, True)
        self.assertGreater(to_new, 0)
        self.assertGreaterEqual(env.total(stats, "path_validated"), 1)

    def test_stale_path_keeps_answering_the_old_port(self):
        dom, stats, (to_old, to_new, from_new), _ = self.load_with_rebinding("stale-path")
        self.assertGreater(from_new, 0)
        self.assertEqual(to_new, 0)
        self.assertGreater(to_old, 0)
        # The old port still reaches Chromium's socket here (the rewrite is only outbound),
        # so the body completes: what a NAT that keeps the old mapping would give.
        self.check_page_and_body(dom, True)

    def test_none_ignores_the_new_port(self):
        dom, stats, (to_old, to_new, from_new), _ = self.load_with_rebinding("none")
        self.assertGreater(from_new, 0)
        self.assertEqual(to_new, 0)
        self.assertGreater(env.total(stats, "policy_ignored"), 0)
        self.check_page_and_body(dom, False)


if __name__ == "__main__":
    unittest.main()
