"""QUICstep against the lab censor (root, the shared lab): with censord's default censor on
the client's ISP router and quicstepd on the client, consecutive native-looking fetches of
blocked.test succeed (gtlsclient and chromium-headless-shell over QUIC, curl over TCP),
while the censor never sees the name (its decision log stays empty of blocks). The strict
modes of the paper's §5 are run too and what happens is reported (success, time), not
assumed. FETCHES (env CENSOR_FETCHES, default 50) per QUIC client, as the paper's 50-fetch
test."""
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import unittest

from qs_support import artifacts, captures, shadowsocks, v2ray
from tests.censor.censor_helpers import (BIG_SIZE, Procs, WORK, censor_lab, chromium_fetch,
                                         curl_fetch, gtlsclient_fetch, lab_helpers, make_site,
                                         wait_lab_idle, wait_listening)
from tests.quicstepd import qsd_helpers as qsd  # quicstepd binary, config, control socket

FETCHES = int(os.environ.get("CENSOR_FETCHES", "50"))
CHROME_FETCHES = int(os.environ.get("CENSOR_CHROME_FETCHES", str(FETCHES)))
WORKDIR = WORK + "-qsd"


class CensorQuicstepd(artifacts.KeepOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        lab_helpers.require_root(cls)
        censor_lab.stop()  # a censord left by an interrupted run (by its recorded PID)
        wait_lab_idle()
        shutil.rmtree(WORKDIR, ignore_errors=True)
        os.makedirs(WORKDIR)
        os.chmod(WORKDIR, 0o755)
        cls.procs = Procs()
        lab_helpers.qslab("up", timeout=180)
        try:
            cls.lab = lab_helpers.status()
            c = cls.lab["client"]
            cls.client_ns, cls.channel_if = c["netns"], c["channel"]["interface"]
            _, key, cert, cls.spki = make_site(WORKDIR)
            htdocs = os.path.join(WORKDIR, "htdocs")
            cls.quic = cls.procs.start("qs-srv1", ["gtlsserver", "--quiet", f"--htdocs={htdocs}", "*", "443",
                                                   key, cert], os.path.join(WORKDIR, "gtlsserver.log"))
            cls.tls = cls.procs.start("qs-srv1", ["openssl", "s_server", "-accept", "443", "-cert", cert,
                                                  "-key", key, "-www", "-quiet"],
                                      os.path.join(WORKDIR, "s_server.log"))
            wait_listening("qs-srv1", "u", 443, cls.quic)
            wait_listening("qs-srv1", "t", 443, cls.tls)
            cls.sock = os.path.join(WORKDIR, "control.sock")
            cls.config = qsd.write_config(os.path.join(WORKDIR, "quicstepd.toml"), cls.channel_if)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        censor_lab.stop()
        cls.procs.stop_all()
        if hasattr(cls, "config"):
            lab_helpers.in_host(cls.lab, "client", qsd.QSD, "--cleanup", "--config", cls.config, check=False)
        lab_helpers.down(cls.any_failed)
        artifacts.finish(WORKDIR, cls.any_failed)

    def start_daemon(self):
        p = self.procs.start(self.client_ns, [qsd.QSD, "--config", self.config, "--control", self.sock],
                             os.path.join(WORKDIR, f"quicstepd-{time.time():.3f}.log"))
        self.addCleanup(self.procs.stop, p)
        qsd.wait_daemon(self.client_ns, self.sock, p)
        return p

    def daemon_status(self):
        return json.loads(qsd.ctl(self.client_ns, self.sock, "status", "--json").stdout)

    def blocks(self):
        return [d for d in censor_lab.decisions() if d["action"] != "pass"]

    def tearDown(self):
        censor_lab.stop()

    def fetch_blocked_test(self, prefix, fetches=None, chrome_fetches=None):
        """FETCHES gtlsclient and CHROME_FETCHES Chromium fetches of blocked.test (or the
        counts given), one after another: [(client, ok, seconds)]."""
        results = []
        for i in range(FETCHES if fetches is None else fetches):
            ok, secs = gtlsclient_fetch(WORKDIR, f"{prefix}gtls-{i}", "blocked.test", timeout=15)
            results.append(("gtlsclient", ok, secs))
        for i in range(CHROME_FETCHES if chrome_fetches is None else chrome_fetches):
            ok, secs, _ = chromium_fetch(WORKDIR, f"{prefix}chrome-{i}", "https://blocked.test/",
                                         self.spki, ["--enable-quic",
                                                     "--origin-to-force-quic-on=blocked.test:443"],
                                         timeout=20)
            results.append(("chromium", ok, secs))
        return results

    def test_1_default_censor_fifty_fetches_succeed(self):
        censor_lab.start([])
        self.start_daemon()
        results = self.fetch_blocked_test("")
        t0 = time.time()
        ok, rc, err = curl_fetch("blocked.test", timeout=15)
        results.append(("curl-tcp", ok, time.time() - t0))
        st = self.daemon_status()
        for client in ("gtlsclient", "chromium", "curl-tcp"):
            rs = [r for r in results if r[0] == client]
            good = [r[2] for r in rs if r[1]]
            print(f"\n[quicstepd vs default censor] {client}: {len(good)}/{len(rs)} fetches of blocked.test "
                  f"succeeded" + (f", median {sorted(good)[len(good) // 2]:.2f}s" if good else ""))
        print(f"[quicstepd] paths {st.get('paths')} watchdog {st.get('watchdog')}")
        self.assertEqual([r for r in results if not r[1]], [], "every fetch must succeed")
        self.assertEqual(self.blocks(), [], "the censor must never see a blocked name")
        self.assertGreater(st["paths"]["native"]["packets"], 0, "the data went native")

    def strict_run(self, mode):
        if not mode:
            censor_lab.start([])
        else:
            censor_lab.start([mode])
        self.start_daemon()
        outcome = []
        for i in range(3):
            ok, secs = gtlsclient_fetch(WORKDIR, f"{mode}-{i}", "blocked.test", timeout=60,
                                        resource="big.bin", size=BIG_SIZE)
            outcome.append((ok, secs))
        st = self.daemon_status()
        rules = sorted({d["rule"] for d in self.blocks()})
        print(f"\n[quicstepd vs {mode or 'default censor'}] gtlsclient fetches of blocked.test/big.bin ({BIG_SIZE} B): "
              + ", ".join(f"{'ok' if ok else 'FAILED'} {s:.2f}s" for ok, s in outcome)
              + f"; censor rules fired: {rules}; watchdog {st.get('watchdog')}")
        return outcome, rules, st

    def test_2_baseline_big_file_default_censor(self):
        outcome, rules, st = self.strict_run("")
        self.assertTrue(all(ok for ok, _ in outcome))
        self.assertEqual(rules, [])
        native = st["paths"]["native"]
        print(f"[quicstepd] native path: {native}; channel: {st['paths']['channel']}")
        self.assertGreater(native["bytes"] + native["in_bytes"], 2 * BIG_SIZE, "the bulk went native")

    def test_2_strict_short_header_reported(self):
        outcome, rules, _ = self.strict_run("--strict-short-header")
        self.assertIn("strict_short_header", rules, "the migrated (native) flow meets the strict rule")

    def test_3_strict_all_quic_reported(self):
        outcome, rules, _ = self.strict_run("--strict-all-quic")
        self.assertIn("strict_all_quic", rules)

    FORWARDER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "lab", "tunnel_forwarder.py")

    def wait_device(self, ns, dev, proc):
        deadline = time.time() + 10
        while subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "show", dev],
                             capture_output=True).returncode != 0:
            self.assertIsNone(proc.poll(), f"the forwarder for {dev} exited")
            self.assertLess(time.time(), deadline, f"the forwarder did not create {dev}")
            time.sleep(0.05)

    @staticmethod
    def run_in(ns, *cmd):
        subprocess.run(["ip", "netns", "exec", ns, *cmd], check=True, timeout=10)

    def start_tunnel_client(self, server):
        """The tunnel's client end: its TUN qs-tun0 with the tunnel addresses (.9 in the
        channel's subnets), up. Returns its process."""
        c = self.lab["client"]
        tun_v4 = c["channel"]["v4"].rsplit(".", 1)[0] + ".9"
        tun_v6 = c["channel"]["v6"].rsplit(":", 1)[0] + ":9"
        near = self.procs.start(self.client_ns, ["python3", self.FORWARDER, "--tun", "qs-tun0",
                                                 "--connect", f"{server}:40001"],
                                os.path.join(WORKDIR, f"forwarder-client-{time.time():.3f}.log"))
        self.addCleanup(self.procs.stop, near)
        self.wait_device(self.client_ns, "qs-tun0", near)
        ns = self.client_ns
        self.run_in(ns, "sysctl", "-qw", "net.ipv6.conf.qs-tun0.router_solicitations=0")
        self.run_in(ns, "ip", "addr", "add", f"{tun_v4}/32", "dev", "qs-tun0")
        self.run_in(ns, "ip", "-6", "addr", "add", f"{tun_v6}/128", "dev", "qs-tun0", "nodad")
        self.run_in(ns, "ip", "link", "set", "qs-tun0", "up")
        return near, tun_v4, tun_v6

    def start_forwarded_tunnel(self):
        """lab/tunnel_forwarder.py as "another program's tunnel": a TUN qs-tun0 on the client
        (start_tunnel_client), forwarded over UDP 40001 to a TUN qs-ptun0 at the provider,
        which routes the client's tunnel addresses back into it. Returns (interface, its
        server's address, the client end's process)."""
        prov = self.lab["provider"]
        server = self.lab["client"]["channel"]["endpoint"].rsplit(":", 1)[0]
        far = self.procs.start(prov["netns"], ["python3", self.FORWARDER, "--tun", "qs-ptun0",
                                               "--listen", "40001"],
                               os.path.join(WORKDIR, "forwarder-provider.log"))
        self.addCleanup(self.procs.stop, far)
        self.wait_device(prov["netns"], "qs-ptun0", far)
        near, tun_v4, tun_v6 = self.start_tunnel_client(server)
        self.run_in(prov["netns"], "ip", "link", "set", "qs-ptun0", "up")
        self.run_in(prov["netns"], "ip", "route", "add", f"{tun_v4}/32", "dev", "qs-ptun0")
        self.run_in(prov["netns"], "ip", "-6", "route", "add", f"{tun_v6}/128", "dev", "qs-ptun0")
        return "qs-tun0", server, near

    def start_interface_daemon(self, ifname, server):
        config = qsd.write_config(
            os.path.join(WORKDIR, "interface.toml"), ifname,
            extra=f'channel_kind = "interface"\nchannel_exempt = ["{server}"]\n'
                  f'routing_table = 51822\n')
        p = self.procs.start(self.client_ns, [qsd.QSD, "--config", config, "--control", self.sock],
                             os.path.join(WORKDIR, f"quicstepd-interface-{time.time():.3f}.log"))
        self.addCleanup(self.procs.stop, p)
        qsd.wait_daemon(self.client_ns, self.sock, p)
        return p

    def test_4_wireguard_blocked_interface_channel(self):
        """The censor blocks WireGuard by its handshake fingerprint; the channel is another
        program's tunnel interface (channel_kind = "interface", lab/tunnel_forwarder.py's TUN),
        which the censor does not recognise: the fetches of blocked.test complete, the censor
        never sees the name, the data goes native, and quicstepd judges the tunnel working
        from its device counters."""
        censor_lab.start(["--block-wireguard"])
        ifname, server, _ = self.start_forwarded_tunnel()
        self.start_interface_daemon(ifname, server)
        results = self.fetch_blocked_test("if-")
        ok, secs = gtlsclient_fetch(WORKDIR, "if-big", "blocked.test", timeout=60,
                                    resource="big.bin", size=BIG_SIZE)
        results.append(("gtlsclient-big", ok, secs))
        st = qsd.wait_channel_working(self.lab, self.daemon_status)
        stats = censor_lab.fresh_stats()
        fired = sorted({d["rule"] for d in self.blocks()})
        for client in ("gtlsclient", "chromium", "gtlsclient-big"):
            rs = [r for r in results if r[0] == client]
            print(f"\n[interface channel, WireGuard blocked] {client}: "
                  f"{sum(1 for r in rs if r[1])}/{len(rs)} fetches of blocked.test succeeded")
        print(f"[interface channel] channel {st['channel']}; paths {st['paths']}; censor rules "
              f"fired {fired}; wireguard_blocks {stats.get('wireguard_blocks')}")
        self.assertEqual([r for r in results if not r[1]], [], "every fetch must succeed")
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")
        self.assertEqual(st["channel"]["kind"], "interface")
        self.assertEqual(st["channel"]["health"], "working")
        self.assertGreater(st["channel"]["device"]["rx_bytes"], 0)
        native = st["paths"]["native"]
        self.assertGreater(native["bytes"] + native["in_bytes"], BIG_SIZE, "the bulk went native")


    def test_5_tunnel_program_killed_and_restarted(self):
        """The tunnel program dies (kill -9) under a running quicstepd: its device and the
        channel's routes vanish with it and the handshakes fail closed (fetches of
        blocked.test fail, the censor sees no name). Started again, it creates a new device
        and adds its addresses one at a time, as tunnel programs do: quicstepd follows the
        new device and its addresses (stateless addressing writes them), and fetches succeed
        again within 20 s with nothing restarted but the tunnel."""
        censor_lab.start(["--block-wireguard"])
        ifname, server, near = self.start_forwarded_tunnel()
        self.start_interface_daemon(ifname, server)
        ok, _ = gtlsclient_fetch(WORKDIR, "kill-before", "blocked.test", timeout=15)
        self.assertTrue(ok, "a fetch before the kill")
        before = self.daemon_status()
        os.kill(near.pid, signal.SIGKILL)
        near.wait(timeout=5)
        deadline = time.time() + 5
        while subprocess.run(["ip", "netns", "exec", self.client_ns, "ip", "link", "show", ifname],
                             capture_output=True).returncode == 0:
            self.assertLess(time.time(), deadline, "the killed tunnel's device stayed")
            time.sleep(0.05)
        outage = [gtlsclient_fetch(WORKDIR, f"kill-during-{i}", "blocked.test", timeout=4)
                  for i in range(3)]
        # (The lab's own WireGuard re-handshakes every 2 minutes and meets the WireGuard
        # block: not a name; the other tests filter that rule out too.)
        self.assertEqual([d for d in self.blocks() if d["rule"] != "wireguard"], [],
                         "the censor saw a name while the tunnel was dead")
        self.assertEqual([r for r in outage if r[0]], [],
                         "a fetch succeeded with the tunnel dead: the outage was not real")
        t0 = time.time()
        self.start_tunnel_client(server)
        attempts = 0
        while True:
            attempts += 1
            ok, _ = gtlsclient_fetch(WORKDIR, f"kill-after-{attempts}", "blocked.test", timeout=4)
            if ok or time.time() - t0 > 20:
                break
        resumed = time.time() - t0
        after = [gtlsclient_fetch(WORKDIR, f"kill-then-{i}", "blocked.test", timeout=15)
                 for i in range(10)]
        big_ok, big_secs = gtlsclient_fetch(WORKDIR, "kill-big", "blocked.test", timeout=60,
                                            resource="big.bin", size=BIG_SIZE)
        st = self.daemon_status()
        fired = sorted({d["rule"] for d in self.blocks()})
        print(f"\n[interface channel, tunnel killed] outage: {len(outage)} fetches failed closed; "
              f"restarted: first fetch ok after {resumed:.1f}s ({attempts} attempts), then "
              f"{sum(1 for r in after if r[0])}/{len(after)} ok, {BIG_SIZE} B "
              f"{'ok' if big_ok else 'FAILED'} in {big_secs:.1f}s; daemon "
              f"{ {k: st['daemon'][k] for k in ('channel_recreated', 'channel_readdressed')} }; "
              f"censor rules fired {fired}")
        self.assertTrue(ok, f"no fetch succeeded within 20 s of the tunnel's restart "
                            f"({attempts} attempts)")
        self.assertEqual([r for r in after if not r[0]], [], "every fetch after the restart")
        self.assertTrue(big_ok, "the 5 MB fetch after the restart")
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")
        self.assertGreater(st["daemon"]["channel_recreated"],
                           before["daemon"]["channel_recreated"],
                           f"the new device was seen (daemon before the kill {before['daemon']})")
        native, native_before = st["paths"]["native"], before["paths"]["native"]
        watchdog, watchdog_before = st["watchdog"], before["watchdog"]
        if watchdog["failed_back"] > watchdog_before["failed_back"]:
            # The watchdog judged a flow failed while the tunnel came back (seen once in 26
            # runs under load, an IPv6 flow, before the guard learnt a new tunnel address
            # before the rules that leave UDP to it: for ~25 ms UDP entered the tunnel with
            # its native source, which the lab's forwarder hands to the server mid-handshake;
            # not seen in 17 runs under load since): its server is pinned to the channel for
            # the destination cache's first penalty, by design, so the bulk took the tunnel.
            # What must hold then: one flow failed, a pin is what kept the bulk on the
            # channel, and the native path works for the address not pinned.
            print(f"[interface channel, tunnel killed] a flow was judged failed during the "
                  f"restart; the bulk took the channel (watchdog {watchdog})")
            self.assertEqual(watchdog["failed_back"] - watchdog_before["failed_back"], 1,
                             f"more than one flow failed after the restart: {watchdog}")
            self.assertGreater(watchdog["pinned_by_cache"], watchdog_before["pinned_by_cache"],
                               f"the bulk stayed on the channel without a pin: {watchdog}")
            # One address is pinned; the native path itself must work after the restart: the
            # bulk again to each of blocked.test's addresses, one of which is not pinned.
            srv = self.lab["servers"][0]
            first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
            for family in ("v4", "v6"):
                ok, _ = gtlsclient_fetch(WORKDIR, f"kill-big-{family}", "blocked.test",
                                         timeout=60, resource="big.bin", size=BIG_SIZE,
                                         address=first(srv[family]))
                self.assertTrue(ok, f"the 5 MB fetch over {family} with one address pinned")
            again = self.daemon_status()["paths"]["native"]
            self.assertGreater(again["bytes"] + again["in_bytes"],
                               native["bytes"] + native["in_bytes"] + BIG_SIZE,
                               f"with one address pinned, the bulk to the other went native: "
                               f"native path {native} -> {again}")
            return
        self.assertGreater(native["bytes"] + native["in_bytes"],
                           native_before["bytes"] + native_before["in_bytes"] + BIG_SIZE,
                           f"the bulk went native after the restart: native path before the kill "
                           f"{native_before}, after the bulk {native}; channel {st['channel']}; "
                           f"watchdog {st['watchdog']}")

    def test_6_wireguard_blocked_bulk_native_both_families(self):
        """WireGuard blocked, the forwarder's tunnel as the channel: a 10 MB fetch of
        blocked.test over IPv4 and one over IPv6 (the server's address, blocked.test as SNI:
        IPv6 through the tunnel) each go 99% native by the captures (the censor's
        client-facing link, the tunnel's far end at the provider), the handshakes through
        the tunnel, no DNS, TCP or long header leaked, and the censor saw no name."""
        censor_lab.start(["--block-wireguard"])
        ifname, server, _ = self.start_forwarded_tunnel()
        self.start_interface_daemon(ifname, server)
        with open(os.path.join(WORKDIR, "htdocs", "10M.bin"), "wb") as f:
            f.write(os.urandom(10 * 1000 * 1000))
        srv = self.lab["servers"][0]
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        c = self.lab["client"]
        native_addrs = set(c["native"]["v4"] + c["native"]["v6"])
        censor_ns, censor_if = self.lab["censor"]["netns"], self.lab["censor"]["client_interface"]
        for family, address in (("v4", first(srv["v4"])), ("v6", first(srv["v6"]))):
            native = os.path.join(WORKDIR, f"bulk-{family}-native.pcap")
            channel = os.path.join(WORKDIR, f"bulk-{family}-tunnel.pcap")
            caps = [captures.start(self.procs, censor_ns, censor_if, native),
                    captures.start(self.procs, self.lab["provider"]["netns"], "qs-ptun0",
                                   channel)]
            ok, secs = gtlsclient_fetch(WORKDIR, f"bulk-{family}", "blocked.test", timeout=60,
                                        resource="10M.bin", size=10 * 1000 * 1000,
                                        address=address)
            time.sleep(1.5)  # the capture ring hands over a block at least every second
            for p in caps:
                self.procs.stop(p)
            for path in (native, channel):
                self.assertEqual(captures.drops(path), 0, f"{path}: tcpdump dropped packets")
            npk, cpk = captures.inspect(native), captures.inspect(channel)
            nat_b, ch_b = captures.quic_bytes(npk, address), captures.quic_bytes(cpk, address)
            share = nat_b / max(1, nat_b + ch_b)
            initials = [p for p in cpk if p.get("dst") == address and any(
                q.get("type") == "initial" for q in p.get("quic", []))]
            bad = captures.leaks(npk, native_addrs)
            print(f"\n[interface channel, WireGuard blocked] 10 MB over {family}: "
                  f"{'ok' if ok else 'FAILED'} in {secs:.2f}s; native {nat_b} B, tunnel {ch_b} B "
                  f"(native share {share:.4f}); {len(initials)} Initials through the tunnel; "
                  f"{len(bad)} leaks")
            self.assertTrue(ok, f"the 10 MB fetch over {family}")
            self.assertEqual(bad[:5], [], f"leaked on the native link ({family})")
            self.assertTrue(initials, f"no Initial through the tunnel ({family})")
            self.assertGreaterEqual(share, 0.99, f"native share over {family}")
        fired = sorted({d["rule"] for d in self.blocks()})
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")

    # The tproxy channel: qs_support/shadowsocks.py (ss-server at the provider, ss-redir per
    # family on the client). The censor does not recognise Shadowsocks.
    def start_proxy_clients(self, server):
        redirs = shadowsocks.start_clients(self.procs, self.lab, server, WORKDIR)
        for p in redirs:
            self.addCleanup(self.procs.stop, p)
        return redirs

    def start_shadowsocks(self):
        """Returns (the proxy server's address, the proxy clients)."""
        server, ss = shadowsocks.start_server(self.procs, self.lab, WORKDIR)
        self.addCleanup(self.procs.stop, ss)
        return server, self.start_proxy_clients(server)

    def start_tproxy_daemon(self, server, extra=None):
        config = qsd.write_config(os.path.join(WORKDIR, "tproxy.toml"), None,
                                  extra=extra or shadowsocks.quicstepd_extra(server))
        p = self.procs.start(self.client_ns, [qsd.QSD, "--config", config, "--control", self.sock],
                             os.path.join(WORKDIR, f"quicstepd-tproxy-{time.time():.3f}.log"))
        self.addCleanup(self.procs.stop, p)
        qsd.wait_daemon(self.client_ns, self.sock, p)
        return p

    def bulk_native_share(self, name, address, proxy, family, netns="qs-client"):
        """A 10 MB fetch of blocked.test from `address` (blocked.test as SNI) in `netns`,
        captured on the censor's client-facing link. Returns (ok, seconds, native QUIC bytes,
        bytes to and from the proxy server, leaks, the capture's packets)."""
        censor_ns, censor_if = self.lab["censor"]["netns"], self.lab["censor"]["client_interface"]
        pcap = os.path.join(WORKDIR, f"{name}-{family}.pcap")
        cap = captures.start(self.procs, censor_ns, censor_if, pcap)
        ok, secs = gtlsclient_fetch(WORKDIR, f"{name}-{family}", "blocked.test", timeout=60,
                                    resource="10M.bin", size=10 * 1000 * 1000, address=address,
                                    netns=netns)
        time.sleep(1.5)  # the capture ring hands over a block at least every second
        self.procs.stop(cap)
        self.assertEqual(captures.drops(pcap), 0, f"{pcap}: tcpdump dropped packets")
        pk = captures.inspect(pcap)
        native = captures.quic_bytes(pk, address)
        proxied = sum(p["ip_len"] for p in pk if proxy in (p.get("src"), p.get("dst")))
        c = self.lab["client"]
        # The proxy's own packets (Shadowsocks, to its server: exempt) are not leaks.
        bad = captures.leaks([p for p in pk if proxy not in (p.get("src"), p.get("dst"))],
                             set(c["native"]["v4"] + c["native"]["v6"]) |
                             {qsd.LAN_V4, qsd.LAN_V6})
        return ok, secs, native, proxied, bad, pk

    def bulk_both_families(self, name, proxy, label, netns="qs-client"):
        """bulk_native_share over IPv4 and IPv6 (the first server's addresses), printed:
        {family: (ok, native share, leaks)}."""
        srv = self.lab["servers"][0]
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        shares = {}
        for family, address in (("v4", first(srv["v4"])), ("v6", first(srv["v6"]))):
            ok, secs, native, proxied, bad, _ = self.bulk_native_share(name, address, proxy,
                                                                       family, netns)
            share = native / max(1, native + proxied)
            shares[family] = (ok, share, bad)
            print(f"\n[{label}] 10 MB over {family}: {'ok' if ok else 'FAILED'} in {secs:.2f}s; "
                  f"native {native} B, to and from the proxy {proxied} B (native share "
                  f"{share:.4f}); {len(bad)} leaks")
        return shares

    @staticmethod
    def print_fetches(results, label):
        for client in ("gtlsclient", "chromium"):
            rs = [r for r in results if r[0] == client]
            good = sorted(r[2] for r in rs if r[1])
            print(f"[{label}] {client}: {len(good)}/{len(rs)} fetches of blocked.test succeeded"
                  + (f", median {good[len(good) // 2]:.2f}s" if good else ""))

    def write_10m(self):
        path = os.path.join(WORKDIR, "htdocs", "10M.bin")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(os.urandom(10 * 1000 * 1000))

    def test_7_wireguard_blocked_tproxy_channel(self):
        """The censor blocks WireGuard; the channel is the user's Shadowsocks client as a
        transparent proxy (channel_kind = "tproxy", ss-redir): 50 gtlsclient and 50 Chromium
        fetches of blocked.test complete (DNS through the proxy too), the censor sees no
        name, quicstepd judges the proxy working; a 10 MB fetch over IPv4 and one over IPv6
        each go at least 99% native by the capture on the censor's link (the rest is
        Shadowsocks to its server), with no DNS, TCP or long header on the native path."""
        censor_lab.start(["--block-wireguard"])
        self.write_10m()
        proxy, _ = self.start_shadowsocks()
        self.start_tproxy_daemon(proxy)
        results = self.fetch_blocked_test("tp-")
        st = qsd.wait_channel_working(self.lab, self.daemon_status)
        shares = self.bulk_both_families("tp-bulk", proxy, "tproxy channel, WireGuard blocked")
        fired = sorted({d["rule"] for d in self.blocks()})
        self.print_fetches(results, "tproxy channel, WireGuard blocked")
        print(f"[tproxy channel] channel {st['channel']}; censor rules fired {fired}")
        self.assertEqual([r for r in results if not r[1]], [], "every fetch must succeed")
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")
        self.assertEqual(st["channel"]["kind"], "tproxy")
        self.assertEqual({k: v["removals"] for k, v in st["healing"]["pieces"].items()
                          if v["removals"]}, {}, "none of quicstepd's kernel state went missing")
        self.assertTrue(st["channel"]["up"])
        self.assertEqual(st["channel"]["health"], "working")
        self.assertGreater(st["channel"]["proxy"]["rx_bytes"], 0)
        for family, (ok, share, bad) in shares.items():
            self.assertTrue(ok, f"the 10 MB fetch over {family}")
            self.assertEqual(bad[:5], [], f"leaked on the native link ({family})")
            self.assertGreaterEqual(share, 0.99, f"native share over {family}")

    def test_8_proxy_client_and_daemon_killed(self):
        """kill -9 of the proxy client mid-transfer: the transfer, already native, completes;
        new handshakes fail closed (the censor sees no name, the status says the proxy is not
        listening); started again, fetches resume by themselves. kill -9 of quicstepd
        mid-transfer: its rules stay, so fetches keep working through the proxy; restarted,
        it takes over. Neither capture on the censor's link shows a leak."""
        self.kill_proxy_client_then_daemon(None, "tp")

    def test_11_lan_host_proxy_client_and_daemon_killed(self):
        """test_8 for a LAN host behind the client (a router): the LAN's rules (the zone
        chain's mark, the rule to the proxy's table) outlive quicstepd as the host's own do,
        and no packet leaves natively with the LAN's address or without NAT."""
        self.kill_proxy_client_then_daemon(qsd.LAN_NS, "tp-lan")

    def kill_proxy_client_then_daemon(self, netns, tag):
        """test_8's steps, the fetches run in `netns` (None: the client; else a LAN host)."""
        censor_lab.start(["--block-wireguard"])
        self.write_10m()
        extra = ""
        if netns:
            qsd.lan_host(self, self.client_ns, self.lab["client"]["native"]["interface"])
            extra = f'native_prefixes = ["{qsd.LAN_V4}/24", "{qsd.LAN_V6}/64"]\n'
        proxy, redirs = self.start_shadowsocks()
        daemon = self.start_tproxy_daemon(proxy, shadowsocks.quicstepd_extra(proxy) + extra)
        address = self.lab["servers"][0]["v4"]
        address = address[0] if isinstance(address, list) else address
        c = self.lab["client"]
        # A LAN address on the native link is a leak as much as the client's own: the LAN's
        # packets must leave through the router's NAT or the proxy.
        native_addrs = set(c["native"]["v4"] + c["native"]["v6"])
        if netns:
            native_addrs |= {qsd.LAN_V4, qsd.LAN_V6}

        def fetch(name, timeout, **kw):
            # The client resolves blocked.test through the proxy; the LAN host has no
            # resolver of its own here (test_10 tries its lookup), so it gets the address.
            if netns:
                kw = {"address": address, **kw, "netns": netns}
            return gtlsclient_fetch(WORKDIR, f"{tag}-{name}", "blocked.test", timeout=timeout,
                                    **kw)
        censor_ns, censor_if = self.lab["censor"]["netns"], self.lab["censor"]["client_interface"]

        def during_transfer(name, kill):
            """A 10 MB fetch; `kill` runs 0.5 s into it. Returns (ok, leaks)."""
            pcap = os.path.join(WORKDIR, f"{tag}-{name}.pcap")
            cap = captures.start(self.procs, censor_ns, censor_if, pcap)
            out = {}
            thread = threading.Thread(target=lambda: out.update(r=fetch(
                name, 60, resource="10M.bin", size=10 * 1000 * 1000, address=address)))
            thread.start()
            time.sleep(0.5)
            kill()
            thread.join()
            time.sleep(1.5)
            self.procs.stop(cap)
            pk = [p for p in captures.inspect(pcap) if proxy not in (p.get("src"), p.get("dst"))]
            return out["r"][0], captures.leaks(pk, native_addrs)

        def kill_redirs():
            for p in redirs:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=5)

        ok, bad = during_transfer("kill-proxy", kill_redirs)
        who = "tproxy, a LAN host" if netns else "tproxy"
        print(f"\n[{who}, proxy client killed mid-transfer] the transfer "
              f"{'completed' if ok else 'FAILED'}; {len(bad)} leaks")
        self.assertEqual(bad[:5], [], "leaked with the proxy client killed")
        self.assertTrue(ok, "the transfer, native already, survives the proxy client")
        outage = [fetch(f"dead-{i}", 4) for i in range(3)]
        st = self.daemon_status()
        self.assertEqual([r for r in outage if r[0]], [], "a fetch succeeded with no proxy")
        self.assertFalse(st["channel"]["up"], "the status says the proxy is not listening")
        t0 = time.time()
        redirs[:] = self.start_proxy_clients(proxy)
        attempts = 0
        while True:
            attempts += 1
            ok_again, _ = fetch(f"back-{attempts}", 4)
            if ok_again or time.time() - t0 > 20:
                break
        resumed = time.time() - t0
        back = [fetch(f"then-{i}", 15) for i in range(5)]
        st = self.daemon_status()
        print(f"[{who}, proxy client killed] {len(outage)} fetches failed closed while it was "
              f"dead; restarted: first fetch ok after {resumed:.1f}s ({attempts} attempts), then "
              f"{sum(1 for r in back if r[0])}/{len(back)}; channel {st['channel']}")
        self.assertTrue(ok_again, "no fetch within 20 s of the proxy client's restart")
        self.assertEqual([r for r in back if not r[0]], [], "every fetch after the restart")
        self.assertTrue(st["channel"]["up"])
        # Judged when it came up, not at the next second's reading (before: `up` with
        # `health: down` in the same status).
        self.assertNotEqual(st["channel"]["health"], "down", st["channel"])

        def kill_daemon():
            os.kill(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=5)

        ok, bad = during_transfer("kill-daemon", kill_daemon)
        orphaned = [fetch(f"orphan-{i}", 15) for i in range(3)]
        print(f"[{who}, quicstepd killed mid-transfer] the transfer "
              f"{'completed' if ok else 'FAILED'}; {len(bad)} leaks; with no daemon "
              f"{sum(1 for r in orphaned if r[0])}/{len(orphaned)} fetches completed "
              f"(all through the proxy)")
        self.assertEqual(bad[:5], [], "leaked with quicstepd killed")
        self.assertTrue(ok, "the transfer, native already, survives quicstepd")
        self.assertEqual([r for r in orphaned if not r[0]], [],
                         "with the daemon dead its rules still carry handshakes to the proxy")
        self.start_tproxy_daemon(proxy, shadowsocks.quicstepd_extra(proxy) + extra)
        ok, secs = fetch("restarted", 15)
        self.assertTrue(ok, "a fetch after quicstepd's restart")
        fired = sorted({d["rule"] for d in self.blocks()})
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")

    # A second proxy stack for the tproxy channel: V2Ray (qs_support/v2ray.py), in Go where
    # shadowsocks-libev is C, with its own UDP relay (VMess over TCP) and its own way of
    # answering from the original destination.
    def test_9_wireguard_blocked_v2ray_tproxy_channel(self):
        """The censor blocks WireGuard; the channel is V2Ray's transparent proxy (a
        dokodemo-door inbound in tproxy mode, VMess to its server at the provider): 20
        gtlsclient and 20 Chromium fetches of blocked.test complete, the censor sees no
        name, the status judges the proxy working, and a 10 MB fetch over IPv4 and one over
        IPv6 each go at least 98% native by the capture on the censor's link, with no DNS,
        TCP or long header on the native path."""
        censor_lab.start(["--block-wireguard"])
        self.write_10m()
        proxy, server = v2ray.start_server(self.procs, self.lab, WORKDIR)
        self.addCleanup(self.procs.stop, server)
        client = v2ray.start_client(self.procs, self.lab, proxy, WORKDIR)
        self.addCleanup(self.procs.stop, client)
        self.start_tproxy_daemon(proxy, v2ray.quicstepd_extra(proxy))
        results = self.fetch_blocked_test("v2-", fetches=20, chrome_fetches=20)
        st = qsd.wait_channel_working(self.lab, self.daemon_status)
        shares = self.bulk_both_families("v2-bulk", proxy,
                                         "v2ray tproxy channel, WireGuard blocked")
        fired = sorted({d["rule"] for d in self.blocks()})
        self.print_fetches(results, "v2ray tproxy channel")
        print(f"[v2ray tproxy channel] channel {st['channel']}; censor rules fired {fired}")
        self.assertEqual([r for r in results if not r[1]], [], "every fetch must succeed")
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")
        self.assertEqual(st["channel"]["health"], "working")
        self.assertGreater(st["channel"]["proxy"]["rx_bytes"], 0)
        for family, (ok, share, bad) in shares.items():
            self.assertTrue(ok, f"the 10 MB fetch over {family}")
            self.assertEqual(bad[:5], [], f"leaked on the native link ({family})")
            # 99.8% on an idle machine; 98.9% once beside an ASan build on both cores (the
            # move 0.1 s late: 106 KB of the server's first flights through VMess). The
            # issue's 99% is test_7's; here the second stack must not carry the transfer.
            self.assertGreaterEqual(share, 0.98, f"native share over {family}")

    def test_10_lan_host_through_the_tproxy_channel(self):
        """A LAN host behind the client (a router with the user's Shadowsocks client, the
        censor blocking WireGuard): its packets are forwarded, so quicstepd marks its DNS,
        TCP and QUIC handshakes at prerouting and hands them to ss-redir (before: routed
        into lo and dropped); its flows move native and meet the router's masquerade (their
        conntrack entries start in zone 0). 20 fetches of blocked.test complete, a lookup
        through the proxy is answered truly, 10 MB over IPv4 and IPv6 go >= 99% native with
        no leak and no LAN address on the native link, and the censor sees no name."""
        censor_lab.start(["--block-wireguard"])
        self.write_10m()
        qsd.lan_host(self, self.client_ns, self.lab["client"]["native"]["interface"])
        proxy, _ = self.start_shadowsocks()
        # A router lists its LAN in native_prefixes (client/README, "LAN hosts"): the proxy's
        # DNS and TCP answers to the LAN host pass the guard on the LAN's device.
        self.start_tproxy_daemon(proxy, shadowsocks.quicstepd_extra(proxy) +
                                 f'native_prefixes = ["{qsd.LAN_V4}/24", "{qsd.LAN_V6}/64"]\n')
        srv = self.lab["servers"][0]
        address = srv["v4"][0] if isinstance(srv["v4"], list) else srv["v4"]
        results = [("gtlsclient", *gtlsclient_fetch(WORKDIR, f"tp-lan-{i}", "blocked.test",
                                                     timeout=15, address=address,
                                                     netns=qsd.LAN_NS))
                   for i in range(20)]
        resolver = self.lab["dns"]["v4"]
        resolver = resolver[0] if isinstance(resolver, list) else resolver
        lookup = subprocess.run(["ip", "netns", "exec", qsd.LAN_NS, "dig", "+short", "+tries=2",
                                 "+time=3", f"@{resolver}", "blocked.test"],
                                capture_output=True, text=True, timeout=20)
        truth = subprocess.run(["ip", "netns", "exec", self.lab["dns"]["netns"], "dig", "+short",
                                f"@{resolver}", "blocked.test"], capture_output=True, text=True,
                               timeout=20).stdout.split()
        tcp = subprocess.run(["ip", "netns", "exec", qsd.LAN_NS, "curl", "-4", "-sS", "-k",
                              "--max-time", "10", "--resolve", f"blocked.test:443:{address}",
                              "https://blocked.test/"], capture_output=True, text=True, timeout=20)
        shares = self.bulk_both_families("tp-lan-bulk", proxy, "tproxy channel, a LAN host",
                                         netns=qsd.LAN_NS)
        st = self.daemon_status()
        fired = sorted({d["rule"] for d in self.blocks()})
        self.print_fetches(results, "tproxy channel, a LAN host")
        print(f"[tproxy channel, a LAN host] lookup {lookup.stdout.strip()!r}; TCP "
              f"{'ok' if 's_server' in tcp.stdout else 'FAILED'}; channel "
              f"{st['channel']}; watchdog {st['watchdog']}; censor rules fired {fired}")
        self.assertEqual([r for r in results if not r[1]], [], "every fetch must succeed")
        self.assertEqual([r for r in fired if r != "wireguard"], [],
                         "the censor saw a blocked name")
        self.assertTrue(truth and lookup.stdout.split() == truth,
                        f"the lookup was not answered truly: {lookup.stdout!r}, not {truth}")
        self.assertIn("s_server", tcp.stdout, f"HTTPS over TCP through the proxy: {tcp.stderr}")
        self.assertEqual(st["watchdog"]["failed_back"], 0, "a LAN flow failed back")
        for family, (ok, share, bad) in shares.items():
            self.assertTrue(ok, f"the 10 MB fetch over {family}")
            self.assertEqual(bad[:5], [], f"leaked on the native link ({family})")
            self.assertGreaterEqual(share, 0.99, f"native share over {family}")

if __name__ == "__main__":
    unittest.main()
