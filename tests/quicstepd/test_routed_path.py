"""quicstepd with the routed native path (native_path = "routed") in the lab (root): policy
routing sends DNS, TCP and QUIC to the channel, the daemon sees copies of the channel's
QUIC packets (nflog) and gives a flow it moves native a rule of its own; a tc guard on the
client's native device drops what must not leave there and counts the watched flows'
answers for the watchdog. Proven as for the queue path, from captures on the censor's
client-facing link (no DNS, TCP or QUIC long header from the client; >= 95% of the bytes
native) and at the provider (the handshake; the channel bytes quicstepctl reports, 2%),
with Debian's gtlsclient and gtlsserver. Also: kill -9 mid-transfer (no leak; the flow
stays native, a new connection goes through the channel; the guard stays), --cleanup,
restart, IPv6, and a server that ignores the new address (the watchdog reads the guard and
brings the flow back)."""
import os
import subprocess
import time
import unittest

import qsd_helpers as h
import test_quicstepd
from qsd_helpers import lab_helpers

SIZE_MB = test_quicstepd.SIZE_MB

CLEAN = {"nft": False, "iptables": False, "rules": False}


class RoutedPathLab(test_quicstepd.QuicstepdLab):
    @classmethod
    def _start_server(cls):
        super()._start_server()
        pin_dir = h.mount_lab_bpffs()
        cls.config = h.write_config(os.path.join(cls.work, "quicstepd.toml"), cls.channel_if,
                                    addressing="stateless",
                                    extra=f'native_path = "routed"\nguard_pin_dir = "{pin_dir}"\n')

    def tearDown(self):
        # Whatever a test left (a killed daemon's rules and guard): gone before the next one.
        lab_helpers.in_host(self.lab, "client", h.QSD, "--cleanup", "--config", self.config,
                            check=False)

    def fetch_and_check(self, server, label):
        cn, native, cp, channel = self.captures(label)
        d = self.start_daemon()
        self.assertTrue(h.guard_pinned(), "the guard is not pinned")
        took = self.fetch(server, label)
        lab_helpers.in_host(self.lab, "client", "dig", "+short", "+tries=1", "+time=3",
                            "open.test", check=False)
        st = self.status()
        rules = h.flow_rules(self.client_ns)
        self.stop_captures(cn, cp)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        self.assertEqual(h.kernel_state(self.client_ns), CLEAN)
        self.assertFalse(h.guard_pinned(), "the guard outlived a clean exit")
        npk, cpk = self.read_captures(native, channel)
        nat_b, ch_b, share = self.native_share(npk, cpk, server)
        initials = [p for p in cpk if p.get("dst") == server and any(
            q.get("type") == "initial" for q in p.get("quic", []))]
        self.assertTrue(initials, "no Initial at the provider")
        self.assertTrue(all(p["src"] in self.tunnel_addrs for p in initials),
                        "channel packets must carry the tunnel address")
        self.assertTrue(any(p.get("dns") for p in cpk), "the DNS lookup did not use the channel")
        reported = st["paths"]["channel"]["bytes"]
        at_provider = sum(p["ip_len"] for p in cpk if p.get("src") in self.tunnel_addrs)
        native_reported = st["kernel"]["native_out"]["bytes"] + st["kernel"]["native_in"]["bytes"]
        print(f"\n[routed {label}] {took:.2f}s, native share {share:.4f} ({nat_b} native / "
              f"{ch_b} channel bytes); channel bytes reported {reported}, at provider "
              f"{at_provider}; native reported {native_reported}; flow rules {rules}; "
              f"routed {st['routed']}; watchdog {st['watchdog']}")
        self.assertEqual(st["native_path"], "routed")
        self.assertTrue(any(server in r for r in rules), f"no flow rule to {server}: {rules}")
        self.assertGreaterEqual(st["routed"]["rules_added"], 1)
        self.assertEqual(st["routed"]["rule_failures"], 0)
        self.assertGreaterEqual(share, 0.95)
        self.assertLessEqual(abs(reported - at_provider), 0.02 * at_provider)
        # The guard counted the native bytes (IP bytes; the capture's are the same packets).
        self.assertLessEqual(abs(native_reported - nat_b), 0.02 * nat_b)
        self.assertGreaterEqual(st["watchdog"]["moved_native"], 1)
        self.assertGreaterEqual(st["watchdog"]["confirmed"], 1)  # by the guard's answer count
        self.assertEqual(st["routed"]["flows_watched"], 0)

    def test_r1_fetch_v4(self):
        self.fetch_and_check(self.srv_v4, "v4")

    def test_r2_fetch_v6(self):
        self.fetch_and_check(self.srv_v6, "v6")

    def test_r3_kill9_mid_transfer_cleanup_restart(self):
        cn, native, cp, channel = self.captures("rkill")
        d = self.start_daemon()
        out_dir = os.path.join(self.work, "rkill")
        client = self.procs.start(self.client_ns, self.fetch_cmd(self.srv_v4, out_dir),
                                  os.path.join(self.work, "rkill-client.log"))
        deadline = time.time() + 20
        while time.time() < deadline and self.status()["routed"]["rules_added"] < 1:
            time.sleep(0.02)
        mid = client.poll() is None
        self.procs.stop(d, sig=9)
        client.wait(100)
        self.assert_downloaded(out_dir)
        # The dead daemon's rules and guard stay: the moved flow native, the rest channel.
        self.assertTrue(h.guard_pinned(), "the guard went with the daemon")
        self.assertTrue(h.kernel_state(self.client_ns)["rules"])
        self.stop_captures(cn)
        after = os.path.join(self.work, "rkill-after.pcap")
        cn2 = h.start_capture(self.procs, self.censor_ns, self.censor_if, after)
        took = self.fetch(self.srv_v4, "rkill-after")
        self.stop_captures(cn2, cp)
        self.assert_complete(native, after)
        npk, npk2, cpk = h.inspect(native), h.inspect(after), h.inspect(channel)
        self.assert_no_leak(npk)
        self.assert_no_leak(npk2)
        self.assertEqual(h.quic_bytes(npk2, self.srv_v4), 0,
                         "a connection made while the daemon was dead went native")
        print(f"\n[routed kill -9] killed mid-transfer: {mid}; in-flight fetch completed, "
              f"{h.quic_bytes(npk, self.srv_v4)} native bytes before the second fetch; a new "
              f"fetch with the daemon dead took {took:.2f}s, all through the channel")
        self.assertTrue(mid, "the transfer ended before the kill: no mid-transfer check")
        res = lab_helpers.in_host(self.lab, "client", h.QSD, "--cleanup", "--config",
                                  self.config, check=False)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(h.kernel_state(self.client_ns), CLEAN)
        self.assertFalse(h.guard_pinned(), "--cleanup left the guard")
        d = self.start_daemon()
        self.fetch(self.srv_v4, "rkill-restart")
        self.assertGreaterEqual(self.status()["kernel"]["native_in"]["bytes"], SIZE_MB * 900_000)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)

    def test_r4_server_ignores_new_address_watchdog_falls_back(self):
        addrs = ", ".join(a for a in self.client_native if ":" not in a)
        rules = ("table inet qsd_test_ignore {\n chain in {\n"
                 "  type filter hook input priority 0; policy accept;\n"
                 f"  ip saddr {{ {addrs} }} udp dport 443 drop\n }}\n}}\n")
        subprocess.run(["ip", "netns", "exec", self.srv_ns, "nft", "-f", "-"], input=rules,
                       text=True, check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "exec", self.srv_ns, "nft", "delete",
                                         "table", "inet", "qsd_test_ignore"], check=False)
        cn, native, cp, channel = self.captures("rignore")
        d = self.start_daemon()
        took_first = self.fetch(self.srv_v4, "rignore-1")
        st1 = self.status()
        rules_after_failure = h.flow_rules(self.client_ns)
        took_second = self.fetch(self.srv_v4, "rignore-2")
        st2 = self.status()
        self.stop_captures(cn, cp)
        self.assertEqual(self.procs.stop(d, timeout=15), 0)
        self.assert_complete(native)
        self.assert_no_leak(h.inspect(native))
        print(f"\n[routed, ignoring server] first fetch {took_first:.2f}s (watchdog fall-back), "
              f"second {took_second:.2f}s (pinned to the channel); watchdog {st2['watchdog']}; "
              f"routed {st2['routed']}")
        self.assertGreaterEqual(st1["watchdog"]["failed_back"], 1)
        self.assertEqual(rules_after_failure, [], "the failed flow kept its rule")
        self.assertGreaterEqual(st1["routed"]["rules_deleted"], 1)
        self.assertGreaterEqual(st2["watchdog"]["pinned_by_cache"], 1)


# Only the tests above: the queue path's are QuicstepdLab's own.
for _name in [n for n in dir(test_quicstepd.QuicstepdLab) if n.startswith("test_")]:
    if _name not in RoutedPathLab.__dict__:
        setattr(RoutedPathLab, _name, None)

if __name__ == "__main__":
    unittest.main()
