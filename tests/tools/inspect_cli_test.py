"""quicstep-inspect from the outside: run the binary on the real captures in tests/data and
check the JSON lines it prints. From the repository's root (QS_BUILD names the build, default
build/release): python3 -m unittest -v tests.tools.inspect_cli_test"""
import json
import os
import subprocess
import sys
import unittest

from qs_support import binaries

INSPECT = binaries.path("quicstep-inspect")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def run(*args):
    proc = subprocess.run([INSPECT, *args], capture_output=True, text=True, timeout=60)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


class InspectCli(unittest.TestCase):
    def test_names_sni_of_two_datagram_browser_hello(self):
        for name in ("chromium_quic_blocked.pcap", "chromium_quic_blocked_v6.pcap"):
            rc, lines, err = run("--handshakes", os.path.join(DATA, name))
            self.assertEqual(rc, 0, err)
            hellos = [l["tls"] for l in lines if "tls" in l]
            self.assertEqual(len(hellos), 1, name)
            self.assertEqual(hellos[0]["sni"], "blocked.test")
            self.assertEqual(hellos[0]["alpn"], ["h3"])
            self.assertEqual(hellos[0]["packets"], 2, "the ClientHello spans two Initials")

    def test_first_datagram_only_misses_it(self):
        rc, lines, err = run("--handshakes", "--first-datagram-only",
                             os.path.join(DATA, "chromium_quic_blocked.pcap"))
        self.assertEqual(rc, 0, err)
        self.assertFalse([l for l in lines if "tls" in l])
        self.assertEqual(len([l for l in lines if "tls_error" in l]), 1)

    def test_every_packet_gets_a_line_with_quic_fields(self):
        rc, lines, err = run(os.path.join(DATA, "chromium_quic_blocked.pcap"))
        self.assertEqual(rc, 0, err)
        self.assertEqual([l["n"] for l in lines], list(range(1, len(lines) + 1)))
        first = lines[0]
        self.assertEqual(first["proto"], "udp")
        self.assertEqual(first["dport"], 443)
        q = first["quic"][0]
        self.assertEqual((q["form"], q["type"], q["version"]), ("long", "initial", "0x00000001"))
        self.assertEqual(len(q["dcid"]), 16)
        self.assertIn("pn", q)
        shorts = [p for l in lines for p in l.get("quic", []) if p["form"] == "short"]
        self.assertTrue(shorts, "1-RTT packets are shown too")

    def test_tls_over_tcp_and_dns(self):
        rc, lines, err = run("--handshakes", os.path.join(DATA, "chromium_tls_tcp_blocked.pcap"))
        self.assertEqual(rc, 0, err)
        self.assertEqual([l["tls"]["sni"] for l in lines if "tls" in l], ["blocked.test"])
        rc, lines, err = run("--handshakes", os.path.join(DATA, "dns_queries.pcap"))
        names = {q["name"] for l in lines for q in l["dns"]["questions"]}
        self.assertIn("blocked.test", names)
        self.assertIn("www.open.test", names)

    def test_bad_input_gets_a_clear_error(self):
        rc, _, err = run("/nonexistent.pcap")
        self.assertEqual(rc, 1)
        self.assertIn("/nonexistent.pcap", err)
        rc, _, err = run(os.path.join(DATA, "README.md"))
        self.assertEqual(rc, 1)
        self.assertIn("cannot read", err)

    def test_a_capture_cut_short_is_reported(self):
        import tempfile
        with open(os.path.join(DATA, "chromium_quic_blocked.pcap"), "rb") as f:
            data = f.read()
        with tempfile.NamedTemporaryFile(suffix=".pcap") as cut:
            cut.write(data[: len(data) // 2])
            cut.flush()
            rc, lines, err = run(cut.name)
        self.assertEqual(rc, 1)
        self.assertTrue(lines, "packets before the cut are still printed")
        self.assertIn("read stopped", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
