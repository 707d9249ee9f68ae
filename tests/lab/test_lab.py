"""Lab integration tests (root): reachability over IPv4 and IPv6, the WireGuard channel,
DNS through the channel, RTT and rate against a profile, the delay line's accuracy.
One lab for the whole class (profile london-ohio: the paper's default setting)."""
import json
import os
import statistics
import subprocess
import time
import unittest

from lab_helpers import (in_host, live_lab_processes, ping_rtts, qslab,
                         require_root, status)

PROFILE = os.environ.get("QSLAB_TEST_PROFILE", "london-ohio")
TOLERANCE = 0.10   # measured RTT and rate within 10% of the profile
RTT_FLOOR_MS = 1.0 # below 10 ms: four queue passes and the stack add a fixed ~0.3-0.6 ms


class LabTest(unittest.TestCase):
    lab = None

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            return
        t = time.monotonic()
        qslab("up", "--profile", PROFILE)
        cls.up_seconds = time.monotonic() - t
        cls.lab = status()

    @classmethod
    def tearDownClass(cls):
        if os.geteuid() == 0:
            qslab("down")

    def setUp(self):
        require_root(self)
        self.assertIsNotNone(self.lab, "qslab up failed")

    # --- status --------------------------------------------------------------------

    def test_status_describes_the_lab(self):
        lab = self.lab
        self.assertTrue(lab["running"], lab)
        self.assertEqual(lab["profile"]["name"], PROFILE)
        for role in ("client", "censor", "provider", "inet", "servers", "dns", "links"):
            self.assertIn(role, lab)
        self.assertGreaterEqual(len(lab["client"]["native"]["v4"]), 2)
        self.assertGreaterEqual(len(lab["client"]["native"]["v6"]), 2)
        self.assertIn(lab["censor"]["client_interface"],
                      lab["hosts"]["censor"]["interfaces"])
        self.assertGreaterEqual(len({s["v4"] for s in lab["servers"]}), 3)
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for h in lab["hosts"].values():
            self.assertIn(h["netns"], netns)
        print(f"\n  up took {self.up_seconds:.1f} s", end=" ")

    # --- reachability --------------------------------------------------------------

    def _reach(self, host, dsts, source=None):
        bad = []
        for dst in dsts:
            cmd = ["ping", "-n", "-c1", "-W3"] + (["-I", source] if source else []) + [dst]
            if in_host(self.lab, host, *cmd, check=False).returncode != 0:
                bad.append(dst)
        self.assertEqual(bad, [], f"{host} (source {source}) cannot reach {bad}")

    def _servers(self, fam):
        return [s[fam] for s in self.lab["servers"]]

    def test_client_reaches_servers_natively_via_the_censor(self):
        native = self.lab["client"]["native"]
        for fam in ("v4", "v6"):
            for src in native[fam]:  # both native addresses (address migration)
                self._reach("client", self._servers(fam), source=src)
            route = json.loads(in_host(self.lab, "client", "ip", "-j", "route", "get",
                                       self._servers(fam)[0]).stdout)[0]
            self.assertEqual(route.get("gateway"), native[f"gateway_{fam}"], route)
            self.assertEqual(route.get("dev"), native["interface"], route)

    def test_client_reaches_servers_through_the_channel(self):
        ch = self.lab["client"]["channel"]
        for fam in ("v4", "v6"):
            self._reach("client", self._servers(fam), source=ch[fam])
            route = json.loads(in_host(self.lab, "client", "ip", "-j", "route", "get",
                                       self._servers(fam)[0], "from", ch[fam]).stdout)[0]
            self.assertEqual(route.get("dev"), ch["interface"], route)

    def test_channel_is_not_the_default(self):
        lab = self.lab
        for fam in ("v4", "v6"):
            route = json.loads(in_host(lab, "client", "ip", "-j", "route", "get",
                                       self._servers(fam)[0]).stdout)[0]
            self.assertNotEqual(route.get("dev"), lab["client"]["channel"]["interface"])

    def test_provider_dns_and_servers_reach_each_other(self):
        lab = self.lab
        for fam in ("v4", "v6"):
            self._reach("provider", self._servers(fam) + [lab["dns"][fam]])
            self._reach("dns", self._servers(fam))
            self._reach(lab["servers"][0]["host"], [lab["provider"][fam]])

    def test_client_reaches_its_provider_and_dns_natively(self):
        for fam in ("v4", "v6"):
            self._reach("client", [self.lab["provider"][fam], self.lab["dns"][fam]])

    # --- the channel ---------------------------------------------------------------

    def test_wireguard_handshake_completed(self):
        lab = self.lab
        for host, ifname in (("client", lab["client"]["channel"]["interface"]),
                             ("provider", lab["provider"]["wg_interface"])):
            out = in_host(lab, host, "wg", "show", ifname, "latest-handshakes").stdout
            stamps = [int(line.split()[1]) for line in out.splitlines()]
            self.assertTrue(stamps and max(stamps) > 0, f"{host}: no handshake: {out!r}")
            self.assertLess(time.time() - max(stamps), 600)

    def test_provider_allows_only_the_tunnel_addresses(self):
        lab = self.lab
        out = in_host(lab, "provider", "wg", "show", lab["provider"]["wg_interface"],
                      "allowed-ips").stdout.split()
        self.assertEqual(sorted(out[1:]), sorted(lab["provider"]["peer_allowed_ips"]))
        native = lab["client"]["native"]["v4"] + lab["client"]["native"]["v6"]
        for addr in native:
            self.assertFalse(any(a.startswith(addr + "/") for a in out), out)

    def test_provider_masquerades_the_tunnel(self):
        lab = self.lab
        srv = lab["servers"][0]
        for fam in ("v4", "v6"):
            # The server replies to the provider's address: if NAT were missing, a
            # tunnel-sourced ping would get no reply (inet has no route to the tunnel).
            self._reach("client", [srv[fam]], source=lab["client"]["channel"][fam])
        nat = in_host(lab, "provider", "nft", "list", "table", "inet", "qslab_nat").stdout
        self.assertIn("masquerade", nat)

    # --- DNS -------------------------------------------------------------------------

    def _dig(self, *args):
        return in_host(self.lab, "client", "dig", "+short", "+time=3", "+tries=2", *args).stdout.split()

    def test_client_resolves_lab_names_through_the_channel(self):
        lab = self.lab
        ch = lab["client"]["channel"]
        for src, server in ((ch["v4"], lab["dns"]["v4"]), (ch["v6"], lab["dns"]["v6"])):
            for name, want in lab["dns"]["names"].items():
                self.assertEqual(self._dig("-b", src, f"@{server}", name, "A"), [want["v4"]], name)
                self.assertEqual(self._dig("-b", src, f"@{server}", name, "AAAA"), [want["v6"]], name)
        with open(lab["dns"]["queries_log"]) as f:
            log = f.read()
        # Queries from the tunnel arrive NATed: from the provider's addresses.
        self.assertIn(f"from {lab['provider']['v4']}", log)
        self.assertIn(f"from {lab['provider']['v6']}", log)
        self.assertNotIn(f"from {ch['v4']}", log)

    def test_client_resolver_is_the_lab_dns(self):
        name, want = next(iter(self.lab["dns"]["names"].items()))
        self.assertEqual(self._dig(name, "A"), [want["v4"]])
        out = in_host(self.lab, "client", "getent", "ahostsv6", name).stdout
        self.assertIn(want["v6"], out)

    # --- profile: RTT and rate -------------------------------------------------------

    def _check_rtt(self, what, measure, expected):
        """measure() pings and returns the RTTs. The median must lie within tolerance of
        the profile. A second measurement is taken when the first misses: a CPU burst on
        this 2-core machine can hold wireguard-go's goroutines for the ~2 s of one
        measurement (seen once in CI: channel v6 median 89.95 ms against 78, while every
        other pair matched); a wrong delay misses both times."""
        tol = max(expected * TOLERANCE, RTT_FLOOR_MS)
        tries = []
        for _ in range(2):
            rtts = measure()
            if not rtts:
                raise AssertionError(f"RTT {what}: no ping replies")
            tries.append(rtts)
            measured = statistics.median(rtts)
            if abs(measured - expected) <= tol:
                break
            time.sleep(1)
        print(f"\n  RTT {what}: {measured:.2f} ms (profile {expected:.1f} ms)"
              + (f", after a first median of {statistics.median(tries[0]):.2f} ms"
                 if len(tries) > 1 else ""), end=" ")
        self.assertLessEqual(abs(measured - expected), tol,
                             f"RTT {what}: medians {[statistics.median(t) for t in tries]} ms, "
                             f"profile {expected} ms; samples {tries}")

    def test_rtt_matches_profile(self):
        lab = self.lab
        rtt = lab["profile"]["rtt_ms"]
        srv = lab["servers"][0]
        for fam in ("v4", "v6"):
            self._check_rtt(f"client-server {fam}",
                            lambda: ping_rtts(lab, "client", srv[fam]), rtt["client_server"])
            self._check_rtt(f"client-provider {fam}",
                            lambda: ping_rtts(lab, "client", lab["provider"][fam]),
                            rtt["client_provider"])
            self._check_rtt(f"provider-server {fam}",
                            lambda: ping_rtts(lab, "provider", srv[fam]), rtt["provider_server"])
            self._check_rtt(f"client-server via channel {fam}",
                            lambda: ping_rtts(lab, "client", srv[fam],
                                              source=lab["client"]["channel"][fam]),
                            rtt["client_provider"] + rtt["provider_server"])

    def _iperf(self, reverse):
        lab = self.lab
        srv = lab["servers"][0]
        server = subprocess.Popen(["ip", "netns", "exec", srv["netns"], "iperf3", "-s", "-1",
                                   "-B", srv["v4"], "-p", "5201"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            args = ["iperf3", "-J", "-c", srv["v4"], "-p", "5201", "-B",
                    lab["client"]["channel"]["v4"], "-t", "6", "-O", "2"]
            if reverse:
                args.append("-R")
            res = in_host(lab, "client", *args, timeout=60)
        finally:
            server.wait(timeout=20)
        doc = json.loads(res.stdout)
        return doc["end"]["sum_received"]["bits_per_second"] / 1e6

    def test_channel_rate_matches_profile(self):
        rate = self.lab["profile"]["channel_rate_mbit"]
        if not rate:
            self.skipTest(f"profile {PROFILE} has no channel rate")
        for reverse, what in ((False, "upload"), (True, "download")):
            got = self._iperf(reverse)
            print(f"\n  channel {what}: {got:.2f} Mbit/s (profile {rate} Mbit/s)", end=" ")
            self.assertLessEqual(abs(got - rate), rate * TOLERANCE,
                                 f"channel {what}: {got:.2f} Mbit/s, profile {rate}")

    def test_delay_line_adds_the_profile_delay(self):
        """One-way delay of a 1,000 packet/s UDP stream client -> server: the profile's
        half client-server RTT, within 10%."""
        lab = self.lab
        probe = os.environ.get("QSLAB_OWD_PROBE")
        self.assertTrue(probe and os.access(probe, os.X_OK), "QSLAB_OWD_PROBE not set")
        srv = lab["servers"][0]
        res = subprocess.run([probe, "--from", lab["client"]["netns"], "--to", srv["netns"],
                              "--dst", srv["v4"], "--rate", "1000", "--count", "2000"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        doc = json.loads(res.stdout)
        want_ms = lab["profile"]["rtt_ms"]["client_server"] / 2
        got_ms = doc["owd_us"]["p50"] / 1000
        print(f"\n  one-way delay at 1000 pkt/s: p50 {got_ms:.3f} ms p99 "
              f"{doc['owd_us']['p99'] / 1000:.3f} ms (profile {want_ms} ms), lost {doc['lost']}", end=" ")
        self.assertEqual(doc["reordered"], 0)
        self.assertLessEqual(doc["lost"], doc["sent"] // 100)
        self.assertLessEqual(abs(got_ms - want_ms), max(want_ms * TOLERANCE, RTT_FLOOR_MS))

    # --- full VPN ----------------------------------------------------------------------

    def test_full_vpn_routes_everything_through_the_channel(self):
        lab = self.lab
        ch = lab["client"]["channel"]
        srv = lab["servers"][1]
        try:
            qslab("vpn", "on")
            self.assertTrue(status()["client"]["channel"]["full_vpn"])
            for fam in ("v4", "v6"):
                route = json.loads(in_host(lab, "client", "ip", "-j", "route", "get", srv[fam]).stdout)[0]
                self.assertEqual(route.get("dev"), ch["interface"], route)
                self._reach("client", [srv[fam]])
            # The tunnel's own packets still go natively to the provider.
            route = json.loads(in_host(lab, "client", "ip", "-j", "route", "get", lab["provider"]["v4"],
                                       "mark", str(ch["fwmark"])).stdout)[0]
            self.assertEqual(route.get("dev"), lab["client"]["native"]["interface"], route)
        finally:
            qslab("vpn", "off")
        self.assertFalse(status()["client"]["channel"]["full_vpn"])
        route = json.loads(in_host(lab, "client", "ip", "-j", "route", "get", srv["v4"]).stdout)[0]
        self.assertEqual(route.get("dev"), lab["client"]["native"]["interface"], route)



class LossTest(unittest.TestCase):
    """Profile `lossy`: 1% loss on the client's ISP link, each direction."""

    def setUp(self):
        require_root(self)

    def tearDown(self):
        if os.geteuid() == 0:
            qslab("down")

    def test_loss_matches_profile(self):
        qslab("up", "--profile", "lossy")
        lab = status()
        loss = lab["links"]["isp"]["emulation"]["loss"]
        self.assertGreater(loss, 0)
        probe = os.environ.get("QSLAB_OWD_PROBE")
        self.assertTrue(probe and os.access(probe, os.X_OK), "QSLAB_OWD_PROBE not set")
        srv = lab["servers"][0]
        n = 5000
        for fam in ("v4", "v6"):
            res = subprocess.run([probe, "--from", lab["client"]["netns"], "--to", srv["netns"],
                                  "--dst", srv[fam], "--rate", "2500", "--count", str(n)],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 0, res.stderr)
            doc = json.loads(res.stdout)
            # Binomial(5000, 0.01): mean 50, sd 7; the bounds are beyond 3.5 sd.
            print(f"\n  loss {fam}: {doc['lost']}/{n} (profile {loss:.0%})", end=" ")
            self.assertGreaterEqual(doc["lost"], 25)
            self.assertLessEqual(doc["lost"], 80)
            self.assertEqual(doc["reordered"], 0)
            self.assertLess(doc["owd_us"]["p99"] / 1000, lab["profile"]["rtt_ms"]["client_server"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
