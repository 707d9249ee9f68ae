"""Lab integration tests (root): reachability over IPv4 and IPv6, the WireGuard channel,
DNS through the channel, RTT and rate against a profile, the delay line's accuracy.
One lab for the whole class (profile london-ohio: the paper's default setting)."""
import json
import os
import subprocess
import time
import unittest

from qs_support import artifacts, binaries
from tests.lab.lab_helpers import (down, in_host, live_lab_processes, ping_rtts, qslab,
                                   require_root, status)
from qs_support.measure import measured as measure_value

PROFILE = os.environ.get("QSLAB_TEST_PROFILE", "london-ohio")
TOLERANCE = 0.10   # measured RTT and rate within 10% of the profile
# The shaper's rate while saturated, as a test: never above the profile's by more than
# TOLERANCE, and not below SHAPER_FLOOR of it. Idle it reads 4.95-5.0 Mbit/s for 5; with two
# builds beside it, 4.39-4.42 (the tbf's watchdog timer fires late under CPU load and its
# burst cannot make up for it): the lab's emulation is slower then, which is the machine's
# state, not a wrong shaper. The floor still fails a shaper set to another of Table 5's rates
# (1, 5, 10 Mbit/s: a factor of 2 or more apart) or missing; the exact figure is reported.
SHAPER_FLOOR = 0.70
RTT_FLOOR_MS = 1.0 # below 10 ms: four queue passes and the stack add a fixed ~0.3-0.6 ms


class LabTest(artifacts.KeepOnFailure, unittest.TestCase):
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
            down(cls.any_failed)

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
        """measure() pings and returns the RTTs. Their minimum must lie within tolerance of
        the profile: the delay line holds every packet for the profile's delay, and a loaded
        machine can only add to that. Load moves more than the median: a compiler on both
        cores delayed wireguard-go's goroutines by a median 12 ms in CI, and once (CI of
        f7427c6, the channel's IPv6 path) 75% of the pings by more than 13 ms, so the lower
        quartile missed twice (samples 80-110 ms). The minimum still sees the delay itself;
        a wrong delay, or a delay line that releases even one packet early, moves it, and
        one that holds every packet too long moves it as much as the median. A second and
        third measurement are taken when the first misses (a burst of load as long as a
        measurement)."""
        tol = max(expected * TOLERANCE, RTT_FLOOR_MS)
        tries = []
        for _ in range(3):
            rtts = measure()
            if len(rtts) < 4:
                raise AssertionError(f"RTT {what}: {len(rtts)} ping replies of 20")
            tries.append(rtts)
            measured = min(rtts)
            if abs(measured - expected) <= tol:
                break
            time.sleep(1)
        measure_value(f"RTT {what} (minimum)", round(measured, 2), "ms", expected,
                      expected - tol, expected + tol, test=self)
        self.assertLessEqual(abs(measured - expected), tol,
                             f"RTT {what}: minima "
                             f"{[min(t) for t in tries]} ms,"
                             f" profile {expected} ms; samples {tries}")

    def test_rtt_matches_profile(self):
        lab = self.lab
        rtt = lab["profile"]["rtt_ms"]
        srv = lab["servers"][0]
        ping = lambda host, dst, **kw: ping_rtts(lab, host, dst, count=20, interval=0.1, **kw)  # noqa: E731
        for fam in ("v4", "v6"):
            self._check_rtt(f"client-server {fam}",
                            lambda: ping("client", srv[fam]), rtt["client_server"])
            self._check_rtt(f"client-provider {fam}",
                            lambda: ping("client", lab["provider"][fam]),
                            rtt["client_provider"])
            self._check_rtt(f"provider-server {fam}",
                            lambda: ping("provider", srv[fam]), rtt["provider_server"])
            self._check_rtt(f"client-server via channel {fam}",
                            lambda: ping("client", srv[fam],
                                         source=lab["client"]["channel"][fam]),
                            rtt["client_provider"] + rtt["provider_server"])

    def _shaper_rate(self, upload, rate):
        """The channel's shaper (a tbf on the sending side's WireGuard interface) measured
        while it is saturated: iperf3 offers UDP at twice the profile's rate through the
        channel for 8 s while the tbf's counters are read every 0.2 s; the rate is the bytes
        it sent over the longest stretch of reads that all found packets waiting in it (so
        a sender starved of CPU for a moment, which empties the queue, is not counted as the
        shaper's slowness). Each read's instant is the middle of its `tc` call: over the
        stretch only its two ends' uncertainty counts, reported with the result. Returns
        (rate in Mbit/s, the stretch in s, its timing uncertainty as a share of the rate,
        iperf3's received rate)."""
        lab = self.lab
        srv = lab["servers"][0]
        ns, dev = ((lab["client"]["netns"], lab["client"]["channel"]["interface"]) if upload
                   else (lab["provider"]["netns"], lab["provider"]["wg_interface"]))
        samples = []

        def sample():
            t0 = time.monotonic()
            q = json.loads(subprocess.run(["ip", "netns", "exec", ns, "tc", "-s", "-j", "qdisc",
                                           "show", "dev", dev], capture_output=True,
                                          text=True, check=True).stdout)
            t1 = time.monotonic()
            tbf = [x for x in q if x.get("kind") == "tbf"]
            self.assertTrue(tbf, f"no tbf on {dev}: {q}")
            samples.append(((t0 + t1) / 2, t1 - t0, tbf[0]["bytes"], tbf[0]["backlog"]))

        server = subprocess.Popen(["ip", "netns", "exec", srv["netns"], "iperf3", "-s", "-1",
                                   "-B", srv["v4"], "-p", "5201"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            args = ["iperf3", "-J", "-u", "-b", f"{2 * rate}M", "-l", "1200", "-c", srv["v4"],
                    "-p", "5201", "-B", lab["client"]["channel"]["v4"], "-t", "8"]
            if not upload:
                args.append("-R")
            client = subprocess.Popen(["ip", "netns", "exec", lab["client"]["netns"], *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while client.poll() is None:
                sample()
                time.sleep(0.2)
            out, err = client.communicate()
            self.assertEqual(client.returncode, 0, err)
        finally:
            server.wait(timeout=20)
        best, start = None, None
        for i, (_, _, _, backlog) in enumerate(samples + [(0, 0, 0, 0)]):
            if backlog > 0 and start is None:
                start = i
            elif backlog == 0 and start is not None:
                if i - 1 > start and (best is None or samples[i - 1][0] - samples[start][0] >
                                      samples[best[1]][0] - samples[best[0]][0]):
                    best = (start, i - 1)
                start = None
        received = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
        if best is None:
            return 0.0, 0.0, 0.0, received
        (ta, ea, ba, _), (tb, eb, bb, _) = samples[best[0]], samples[best[1]]
        return (bb - ba) * 8 / (tb - ta) / 1e6, tb - ta, (ea + eb) / 2 / (tb - ta), received

    def test_channel_rate_matches_profile(self):
        """The channel's shaper sends at the profile's rate when it has packets to send (not
        above it; not below SHAPER_FLOOR of it, which CPU load alone can cost), and nothing
        gets through faster. Fails for a shaper at another of the profiles' rates, on another
        device (no backlog at the channel's), or missing (no backlog; more than the rate
        received)."""
        rate = self.lab["profile"]["channel_rate_mbit"]
        if not rate:
            self.skipTest(f"profile {PROFILE} has no channel rate")
        for upload, what in ((True, "upload"), (False, "download")):
            got, busy, uncertainty, received = self._shaper_rate(upload, rate)
            measure_value(f"channel {what} shaper rate while saturated", round(got, 3),
                          "Mbit/s", rate, rate * SHAPER_FLOOR, rate * (1 + TOLERANCE),
                          test=self)
            measure_value(f"channel {what} longest saturated stretch of 8 s", round(busy, 2),
                          "s", None, 1.0, None, test=self)
            measure_value(f"channel {what} timing uncertainty of the rate", round(uncertainty, 4),
                          "share", test=self)
            measure_value(f"channel {what} received by iperf3", round(received, 3), "Mbit/s",
                          rate, None, rate * (1 + TOLERANCE), test=self)
            self.assertGreaterEqual(busy, 1.0, f"channel {what}: the shaper had packets "
                                    f"waiting for {busy:.2f} s in a row at most, at twice its "
                                    "rate")
            message = (f"channel {what}: the shaper sent {got:.2f} Mbit/s while saturated "
                       f"({busy:.1f} s, timing uncertainty {uncertainty:.1%}), profile {rate}")
            self.assertLessEqual(got, rate * (1 + TOLERANCE - uncertainty), message)
            self.assertGreaterEqual(got, rate * (SHAPER_FLOOR + uncertainty), message)
            self.assertLessEqual(received, rate * (1 + TOLERANCE),
                                 f"channel {what}: {received:.2f} Mbit/s got through, "
                                 f"profile {rate}")

    def test_delay_line_adds_the_profile_delay(self):
        """One-way delay of a 1,000 packet/s UDP stream client -> server: the profile's
        half client-server RTT, within 10%."""
        lab = self.lab
        probe = binaries.path("qs_owd_probe")
        srv = lab["servers"][0]
        res = subprocess.run([probe, "--from", lab["client"]["netns"], "--to", srv["netns"],
                              "--dst", srv["v4"], "--rate", "1000", "--count", "2000"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        doc = json.loads(res.stdout)
        want_ms = lab["profile"]["rtt_ms"]["client_server"] / 2
        got_ms = doc["owd_us"]["p50"] / 1000
        tol = max(want_ms * TOLERANCE, RTT_FLOOR_MS)
        measure_value("one-way delay p50 at 1000 pkt/s", round(got_ms, 3), "ms", want_ms,
                      want_ms - tol, want_ms + tol, test=self)
        measure_value("one-way delay min at 1000 pkt/s", round(doc["owd_us"]["min"] / 1000, 3),
                      "ms", want_ms, test=self)
        measure_value("one-way delay p99 at 1000 pkt/s", round(doc["owd_us"]["p99"] / 1000, 3),
                      "ms", test=self)
        measure_value("one-way delay stream lost of 2000", doc["lost"], "packets", 0, None,
                      doc["sent"] // 100, test=self)
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



class LossTest(artifacts.KeepOnFailure, unittest.TestCase):
    """Profile `lossy`: 1% loss on the client's ISP link, each direction."""

    def setUp(self):
        require_root(self)

    def tearDown(self):
        if os.geteuid() == 0:
            down(self.this_failed())

    def test_loss_matches_profile(self):
        qslab("up", "--profile", "lossy")
        lab = status()
        loss = lab["links"]["isp"]["emulation"]["loss"]
        self.assertGreater(loss, 0)
        probe = binaries.path("qs_owd_probe")
        srv = lab["servers"][0]
        n = 5000
        rtt_ms = lab["profile"]["rtt_ms"]["client_server"]
        for fam in ("v4", "v6"):
            res = subprocess.run([probe, "--from", lab["client"]["netns"], "--to", srv["netns"],
                                  "--dst", srv[fam], "--rate", "2500", "--count", str(n)],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 0, res.stderr)
            doc = json.loads(res.stdout)
            # Binomial(5000, 0.01): mean 50, sd 7; the bounds are beyond 3.5 sd.
            measure_value(f"loss {fam} of {n}", doc["lost"], "packets", n * loss, 25, 80,
                          test=self)
            self.assertGreaterEqual(doc["lost"], 25)
            self.assertLessEqual(doc["lost"], 80)
            self.assertEqual(doc["reordered"], 0)
            # Loss adds no delay: the one-way delay's median stays below the whole RTT (a
            # profile that added its delay twice would put it at the RTT). Its 99th
            # percentile is the userspace delay line's scheduling under load as much as the
            # profile: on this 2-core machine beside a build it read 9.5-10.5 ms in three
            # runs of 2 s (4.3 ms idle), so the tail is bounded by twice the RTT.
            owd = doc["owd_us"]
            measure_value(f"one-way delay p50 {fam}", round(owd["p50"] / 1000, 3), "ms", rtt_ms / 2, 0,
                          rtt_ms, test=self)
            measure_value(f"one-way delay p99 {fam}", round(owd["p99"] / 1000, 3), "ms", rtt_ms / 2, 0,
                          2 * rtt_ms, test=self)
            self.assertLess(owd["p50"] / 1000, rtt_ms, f"{fam}: {owd}")
            self.assertLess(owd["p99"] / 1000, 2 * rtt_ms, f"{fam}: {owd}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
