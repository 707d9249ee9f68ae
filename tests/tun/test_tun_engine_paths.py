"""quicstep-tun in the lab beyond gtlsclient's happy path (root; the lab setup is
test_tun_engine_lab.py's): a real browser, the lab's censor, servers that do not follow a
migration, and a network change mid-transfer.

- Chromium (chromium-headless-shell) loads a 10 MB page over HTTP/3 through the TUN: no DNS,
  TCP, long header or SNI on the native link, and >= 99% of its QUIC bytes native; Firefox
  ESR (neqo) too, over IPv4 and IPv6.
- With censord's default censor on the client's ISP router: 50 Chromium and 10 gtlsclient
  fetches of blocked.test all complete, and the censor never decides to block.
- Servers that do not follow the move: one that drops packets from the client's native
  address, one whose answers never arrive natively, quicstep-server's `none` and
  `stale-path` modes, and Debian's Caddy (quic-go, which does not support migration). Every fetch completes (the watchdog takes the flow back to the
  channel), nothing leaks, and the destination is remembered as non-migrating.
- A network change mid-transfer: the client's native link goes down and the default routes
  move to a second link (its own subnet, routed back by the lab's internet) while a 10 MB
  fetch runs; the engine re-binds its relays and channel (rtnetlink), the server migrates
  again, the fetch completes, and the second link carries the rest of it natively."""
import os
import signal
import subprocess
import time
import unittest

from qs_support import binaries, caddy, certs, chromium, firefox, uplink
from qs_support.procs import wait_for
from tests.censor.censor_helpers import censor_lab
from tests.lab import lab_helpers
from tests.tun import test_tun_engine_lab as base

h = base.h
FETCHES = int(os.environ.get("CENSOR_FETCHES", "50"))  # Chromium's; gtlsclient makes a fifth


class TunEnginePaths(base.TunEngineLab):
    # The happy path's tests are test_tun_engine_lab's; this class reuses its lab only.
    test_1_fetch_v4_and_v6_handshakes_through_the_channel_data_native = None
    test_1b_a_second_engine_leaves_the_running_one_alone = None
    test_2_kill9_helper_mid_transfer_engine_restarts_it = None
    test_3_kill9_engine_mid_transfer_blocks_then_restarts = None
    test_4_a_family_without_a_tunnel_address_is_blocked_not_native = None

    @classmethod
    def _prepare(cls):
        super()._prepare()
        cls.htdocs = os.path.join(cls.work, "htdocs")
        with open(os.path.join(cls.htdocs, "index.html"), "w") as f:
            f.write("<html><body><p>censor test page</p></body></html>\n")
        cls.spki = certs.spki_hash(os.path.join(cls.work, "cert.pem"))

    @classmethod
    def tearDownClass(cls):
        censor_lab.stop()
        super().tearDownClass()

    def chromium_load(self, url, name, timeout):
        home = os.path.join(self.work, f"chrome-{name}")
        os.makedirs(home, exist_ok=True)
        host = url.split("/")[2]
        return lab_helpers.in_host(
            self.lab, "client", *chromium.command(home, self.spki, url, timeout,
                                                  ["--enable-quic",
                                                   f"--origin-to-force-quic-on={host}:443"]),
            check=False, timeout=timeout + 30)

    def nft(self, netns, rules, table):
        subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input=rules, text=True,
                       check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "exec", netns, "nft", "delete", "table",
                                         "inet", table], check=False)

    # --- a browser ------------------------------------------------------------------------
    def test_a_chromium_10mb_page(self):
        page = os.path.join(self.htdocs, "big.html")
        with open(page, "w") as f:
            f.write("<html><body><pre>")
            line = "QUICstep " * 11 + "\n"
            f.write(line * (base.SIZE_MB * 1000 * 1000 // len(line)))
            f.write('</pre><p id="marker">QUICstep big page</p></body></html>\n')
        cn, native, cp, channel = self.captures("chromium")
        engine = self.start_engine()
        t0 = time.time()
        res = self.chromium_load("https://open.test/big.html", "big", 90)
        took = time.time() - t0
        time.sleep(2)
        st = self.status()
        npk, cpk = self.read_captures((cn, cp), native, channel)
        self.assertIn("QUICstep big page", res.stdout[-2000:], res.stderr[-2000:])
        nat_b = h.quic_bytes(npk, self.srv_v4) + h.quic_bytes(npk, self.srv_v6)
        ch_b = h.quic_bytes(cpk, self.srv_v4) + h.quic_bytes(cpk, self.srv_v6)
        share = nat_b / max(1, nat_b + ch_b)
        print(f"\n[chromium] {took:.2f}s, native share {share:.4f} ({nat_b} native / {ch_b} "
              f"channel); watchdog {st['watchdog']}")
        self.assertTrue(any(p.get("dns") for p in cpk), "Chromium's lookup avoided the channel")
        self.assertGreaterEqual(share, 0.99)
        # The offloads were on the path the page took (the default): the relay read the
        # server's bursts several datagrams at a time, and where this kernel takes UDP GSO on
        # a TUN the engine wrote them back as super-packets — and the page still arrived
        # whole, which the kernel's segmentation back into datagrams must give.
        loop = st["loop"]
        print(f"[chromium] offloads {st['offloads']}: relay GRO reads {loop['relay_gro_reads']}, "
              f"TUN GSO writes {loop['tun_gso_writes']} ({loop['tun_gso_segments']} datagrams)")
        self.assertTrue(st["offloads"]["relay_gro"])
        if st["offloads"]["udp_gso"]:
            self.assertGreater(loop["tun_gso_segments"], 0)
        self.assertEqual(loop["tun_gso_refused"], 0)
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    def test_a2_firefox_a_second_browser_and_quic_stack(self):
        """Firefox ESR (neqo; quinn-udp sends with UDP GSO) loads a 10 MB page over HTTP/3
        through the TUN, IPv4 and IPv6: whole, >= 99% of its QUIC bytes native."""
        srv = self.lab["servers"][3]  # srv2-a: not the suite's gtlsserver
        first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
        v4, v6 = first(srv["v4"]), first(srv["v6"])
        work = os.path.join(self.work, "firefox")
        os.makedirs(work, exist_ok=True)
        ca, logs, servers = firefox.start_site(self.procs, srv["netns"], [v4, v6], work,
                                               base.SIZE_MB)
        for server in servers:
            self.addCleanup(self.procs.stop, server)
        cn, native, cp, channel = self.captures("firefox")
        engine = self.start_engine()
        took = {}
        for addr in (v4, v6):
            in_client = lambda *a, **k: lab_helpers.in_host(self.lab, "client", *a, **k)  # noqa: E731
            took[addr], why = firefox.load(in_client, work, ca, addr, logs[addr])
            self.assertIsNone(why)
        time.sleep(2)
        st = self.status()
        npk, cpk = self.read_captures((cn, cp), native, channel)
        for addr in (v4, v6):
            nat_b, ch_b = h.quic_bytes(npk, addr), h.quic_bytes(cpk, addr)
            share = nat_b / max(1, nat_b + ch_b)
            print(f"\n[firefox {addr}] {took[addr]:.2f}s, native share {share:.4f} ({nat_b} "
                  f"native / {ch_b} channel)")
            self.assertGreaterEqual(share, 0.99)
        print(f"[firefox] watchdog {st['watchdog']}")
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    # --- the censor -----------------------------------------------------------------------
    def test_b_censor_fifty_fetches_of_a_blocked_name(self):
        censor_lab.start([])
        self.addCleanup(censor_lab.stop)
        engine = self.start_engine()
        failed = []
        for i in range(max(1, FETCHES // 5)):
            out = os.path.join(self.work, f"blocked-{i}")
            os.makedirs(out, exist_ok=True)
            res = lab_helpers.in_host(self.lab, "client", "timeout", "-k", "2", "15", "gtlsclient",
                                      "--quiet", "--exit-on-all-streams-close", f"--download={out}",
                                      "blocked.test", "443", "https://blocked.test/index.html",
                                      check=False, timeout=30)
            path = os.path.join(out, "index.html")
            if res.returncode != 0 or not os.path.exists(path):
                failed.append(("gtlsclient", i, res.stderr[-300:]))
        for i in range(FETCHES):
            res = self.chromium_load("https://blocked.test/", f"blocked-{i}", 20)
            if "censor test page" not in res.stdout:
                failed.append(("chromium", i, res.stderr[-300:]))
        blocks = [d for d in censor_lab.decisions() if d["action"] != "pass"]
        st = self.status()
        total = FETCHES + max(1, FETCHES // 5)
        print(f"\n[censor] {total - len(failed)}/{total} fetches of blocked.test; "
              f"censor blocks {len(blocks)}; paths {st['paths']}")
        self.assertEqual(failed, [])
        self.assertEqual(blocks, [], "the censor saw the blocked name")
        self.assertGreater(st["paths"]["native"]["packets"], 0)
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    # --- servers that do not follow -------------------------------------------------------
    def non_migrating(self, name, fault):
        """fault() makes the server not follow; two fetches must complete, the first by the
        watchdog's fall-back, the second pinned to the channel by the destination cache."""
        fault()
        cn, native, cp, channel = self.captures(name)
        engine = self.start_engine()
        self.fetch(self.srv_v4, f"{name}-1")
        st1 = self.status()
        self.fetch(self.srv_v4, f"{name}-2")
        st2 = self.status()
        self.read_captures((cn, cp), native, channel)  # asserts: no leak
        print(f"\n[{name}] watchdog {st2['watchdog']}")
        self.assertGreaterEqual(st1["watchdog"]["failed_back"], 1)
        self.assertGreaterEqual(st2["watchdog"]["non_migrating_destinations"], 1)
        self.assertGreaterEqual(st2["watchdog"]["pinned_by_cache"], 1)
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    def test_c_server_ignores_the_new_address(self):
        addrs = ", ".join(a for a in self.client_native if ":" not in a)
        self.non_migrating("ignores", lambda: self.nft(self.srv_ns, (
            "table inet qst_test_ignore {\n chain in {\n"
            "  type filter hook input priority 0; policy accept;\n"
            f"  ip saddr {{ {addrs} }} udp dport 443 drop\n }}\n}}\n"), "qst_test_ignore"))

    def test_d_answers_never_arrive_natively(self):
        addrs = ", ".join(a for a in self.client_native if ":" not in a)
        self.non_migrating("no-answer", lambda: self.nft(self.censor_ns, (
            "table inet qst_test_noanswer {\n chain forward_drop {\n"
            "  type filter hook forward priority 0; policy accept;\n"
            f"  ip daddr {{ {addrs} }} udp sport 443 drop\n }}\n}}\n"), "qst_test_noanswer"))

    def quicstep_server(self, mode, *extra):
        """quicstep-server in `mode` (and `extra` options) on the server's port 443 instead of
        gtlsserver (given back afterwards)."""
        self.procs.stop(self.server)
        self.addCleanup(self.restart_gtlsserver)
        log = os.path.join(self.work, f"quicstep-server-{mode}.log")
        srv = self.procs.start(self.srv_ns, [binaries.path("quicstep-server"), "--listen",
                                             f"{self.srv_v4}:443", "--cert",
                                             os.path.join(self.work, "cert.pem"), "--key",
                                             os.path.join(self.work, "key.pem"), "--workers", "1",
                                             "--migration", mode, "--htdocs", self.htdocs,
                                             *extra], log)
        self.addCleanup(self.procs.stop, srv)
        time.sleep(0.5)
        self.assertIsNone(srv.poll(), f"quicstep-server --migration {mode} did not start")

    def restart_gtlsserver(self):
        type(self).server = self.procs.start(self.srv_ns, [
            "gtlsserver", "--quiet", f"--htdocs={self.htdocs}", "*", "443",
            os.path.join(self.work, "key.pem"), os.path.join(self.work, "cert.pem")],
            os.path.join(self.work, "gtlsserver-again.log"))

    def test_e_quicstep_server_migration_none(self):
        self.non_migrating("mode-none", lambda: self.quicstep_server("none"))

    def test_f_quicstep_server_stale_path(self):
        self.non_migrating("mode-stale-path", lambda: self.quicstep_server("stale-path"))

    def caddy_server(self):
        """Debian's Caddy on the server's port 443 instead of gtlsserver (given back
        afterwards): a real server that does not follow a migration (quic-go 0.29 keeps
        answering the address of the handshake; qs_support/caddy.py)."""
        self.procs.stop(self.server)
        self.addCleanup(self.restart_gtlsserver)
        srv = caddy.start(self.procs, self.srv_ns, [self.srv_v4], self.htdocs,
                          os.path.join(self.work, "key.pem"),
                          os.path.join(self.work, "cert.pem"), self.work)
        self.addCleanup(self.procs.stop, srv)

    def test_f2_caddy_a_real_server_that_does_not_follow(self):
        self.non_migrating("caddy", self.caddy_server)

    def test_f3_server_preferred_address(self):
        """A server that offers a preferred address (quicstepd test_22 says why it matters):
        gtlsclient moves each connection there once its handshake is confirmed. The first
        connection per family may fail (Debian's ngtcp2 server fails two migrations at
        once); the engine learns the server, and the next two complete with >= 95% of the
        bytes native (the relays to the preferred address), nothing leaking."""
        pairs, servers = h.start_preferred_address_servers(
            self.procs, self.lab, self.work, self.htdocs, os.path.join(self.work, "key.pem"),
            os.path.join(self.work, "cert.pem"))
        for server in servers:
            self.addCleanup(self.procs.stop, server)
        cn, native, cp, channel = self.captures("preferred")
        engine = self.start_engine()
        first = {}
        for n, (addr, _) in enumerate(pairs):
            out_dir, cmd = self.fetch_cmd(addr, f"preferred-{n}-first")
            lab_helpers.in_host(self.lab, "client", *cmd, check=False, timeout=120)
            got = os.path.join(out_dir, f"{base.SIZE_MB}M.bin")
            first[addr] = os.path.getsize(got) if os.path.exists(got) else 0
            for i in range(2):
                self.fetch(addr, f"preferred-{n}-{i}")
        time.sleep(1)
        st = self.status()
        npk, cpk = self.read_captures((cn, cp), native, channel)
        for addr, preferred in pairs:
            nat_b = h.quic_bytes(npk, addr) + h.quic_bytes(npk, preferred)
            ch_b = h.quic_bytes(cpk, addr) + h.quic_bytes(cpk, preferred)
            share = nat_b / max(1, nat_b + ch_b)
            print(f"\n[preferred address {addr} -> {preferred}] first connection "
                  f"{first[addr]} bytes; native share {share:.4f} ({nat_b} native / {ch_b} "
                  f"channel); {st['preferred_address']}")
            self.assertGreaterEqual(h.quic_bytes(npk, preferred), 2 * base.SIZE_MB * 1_000_000)
            self.assertGreaterEqual(share, 0.95)
        self.assertGreaterEqual(st["preferred_address"]["client_moves"], 4)
        self.assertLessEqual(st["preferred_address"]["after_move"], 2)
        self.assertEqual(st["preferred_address"]["destinations"], 2)
        self.assertEqual(st["watchdog"]["failed_back"], 0)
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    def test_f4_dns_through_the_channel_reaches_the_providers_resolver(self):
        """quicstepd's test_24 for the engine: the client's resolv.conf names the ISP's
        resolver, which lies for blocked.test; the engine's wg-quick file has a DNS line naming
        the provider's resolver. glibc's getent and dig over UDP and TCP, to the ISP's v4 and
        v6 resolver, get the truth, and a 2 KB TXT comes back whole (in fragments through the
        channel); the provider's capture has no query to the ISP's resolver, the native link
        no DNS, also from sockets that name the native interface (IP_UNICAST_IF, as
        systemd-resolved's do, or SO_BINDTODEVICE). The same engine without the DNS line
        gets the ISP resolver's lie. This file names the provider's endpoint by its name, which
        quicstep-tun looks up at start through the host's resolver (the ISP's here)."""
        dns = h.ResolverLab(self, self.lab, self.procs, self.work)
        wg_dns = self.named_endpoint_conf(dns.PROVIDER_NAME, "channel-dns.conf",
                                          f"DNS = {dns.resolver[0]}, {dns.resolver[1]}")
        cn, native, cp, channel = self.captures("dns")
        engine = self.start_engine(wg_dns)
        got, big = dns.lookups()
        bound = dns.bound_lookups()
        counters = self.run_ns("nft", "list", "counters", "table", "inet", "quicstep_tun")
        st = self.status()
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)
        # No DNS natively but the endpoint's lookup at start, before the TUN's routes (as
        # wg-quick's; the README says a numeric Endpoint avoids it).
        def endpoint_lookup(kind, p):
            names = {q.get("name") for q in p.get("dns", {}).get("questions", [])}
            return kind == "dns" and names == {dns.PROVIDER_NAME}
        npk, cpk = self.read_captures((cn, cp), native, channel, allow=endpoint_lookup)
        looked_up = [p for kind, p in h.leaks(npk, self.client_native) if endpoint_lookup(kind, p)]
        print(f"\n[dns] {got}; TXT lengths {[len(b) for b in big.values()]}; "
              f"channel {st['channel']}; the endpoint's lookup: {len(looked_up)} queries")
        self.assertTrue(looked_up, "the endpoint's name was not looked up natively at start")
        dns.assert_truth(self, got, big)
        self.assertEqual(st["channel"]["dns"], list(dns.resolver))
        self.assertGreaterEqual(st["channel"]["dns_redirected"], 7)
        dns.assert_channel_capture(self, cpk, self.tunnel_addrs)
        # Sockets that name the native interface (IP_UNICAST_IF, as systemd-resolved's do):
        # their UDP is routed again into the TUN with the native source, which the engine
        # renames to the tunnel's (the provider refuses any other) and its answer back, so
        # they get the channel resolver's truth (TCP ignores IP_UNICAST_IF: its query takes
        # the TUN as any other). Bound ones (SO_BINDTODEVICE) are dropped: an answer from the
        # TUN could not reach them. None leaks (the native capture above): before the
        # quicstep_tun table their queries left natively.
        print(f"[dns] sockets that name the native interface: {bound}\n{counters}")
        for name in ("unicast_if udp v4", "unicast_if tcp v4"):
            self.assertEqual(bound[name], dns.truth["v4"], bound)
        self.assertEqual(bound["unicast_if udp v6"], dns.truth["v6"], bound)
        self.assertTrue(bound["bind udp v4"].startswith("error"), bound)
        self.assertTrue(bound["bind udp v6"].startswith("error"), bound)
        self.assertGreaterEqual(st["channel"]["dns_sources_renamed"], 2)
        self.assertGreaterEqual(st["channel"]["dns_answers_to_source"], 2)
        rerouted, dropped = [int(line.split()[1]) for line in counters.splitlines()
                             if line.strip().startswith("packets")]
        self.assertGreaterEqual(rerouted, 2)
        self.assertGreaterEqual(dropped, 1)
        # Without the DNS line: the query reaches the ISP's resolver through the channel.
        engine = self.start_engine()
        without = dns.dig(dns.isp[0], "blocked.test", "A")
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)
        self.assertEqual(without, [dns.LIE[0]])

    # --- the network changes --------------------------------------------------------------
    def second_link_bytes(self, capture2, pcap2, captures, native, channel):
        """Stops the second link's capture and the others; no leak on either link. Returns
        the IP bytes sent to the second link's IPv4 address."""
        self.procs.stop(capture2)
        npk2 = h.inspect(pcap2)
        bad = h.leaks(npk2, self.client_native | self.tunnel_addrs)
        self.assertEqual(bad[:5], [], f"{len(bad)} leaked packets on the second link")
        self.read_captures(captures, native, channel)
        return sum(p["ip_len"] for p in npk2 if p.get("dst") == uplink.CLIENT_V4)

    def test_g_network_change_mid_transfer(self):
        """The native link goes down mid-transfer and the default routes move to a second
        link (Wi-Fi off, cellular on): the engine re-binds its relays and its channel, the
        server migrates again, the fetch completes, and the rest of it arrives natively on the
        second link at its address."""
        up2 = uplink.SecondUplink(self.lab)
        self.addCleanup(up2.remove)
        up2.add()
        self.client_native = self.client_native | up2.addresses
        cn, native, cp, channel = self.captures("netchange")
        native2 = os.path.join(self.work, "netchange-native2.pcap")
        cn2 = h.start_capture(self.procs, self.censor_ns, uplink.ROUTER_IF, native2)
        engine = self.start_engine()
        tunpcap = os.path.join(self.work, "netchange-tun.pcap")
        cntun = h.start_capture(self.procs, self.ns, "qst0", tunpcap)
        out_dir, cmd = self.fetch_cmd(self.srv_v4, "netchange")
        fetch = self.procs.start(self.ns, cmd, os.path.join(self.work, "netchange-fetch.log"))
        path = os.path.join(out_dir, f"{base.SIZE_MB}M.bin")
        try:
            self.assertTrue(wait_for(lambda: os.path.exists(path) and
                                     os.path.getsize(path) > 2_000_000, fetch, seconds=30),
                            "the fetch did not get going")
            at = os.path.getsize(path)
            up2.switch()
            code = fetch.wait(100)
        finally:
            up2.restore_first()
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if code != 0 or size != base.SIZE_MB * 1_000_000:  # (the stall, not yet understood)
            route = subprocess.run(["ip", "netns", "exec", self.ns, "ip", "-d", "route", "get",
                                    self.srv_v4], capture_output=True, text=True).stdout
            print(f"\n[network change failed at {size} bytes, exit {code}] route to the "
                  f"server now: {route.strip()}; engine status {self.status()}")
        self.assertEqual(code, 0, "the fetch failed across the network change")
        self.assert_downloaded(out_dir)
        time.sleep(1)
        st = self.status()
        from_new = self.second_link_bytes(cn2, native2, (cn, cp), native, channel)
        print(f"\n[network change at {at} bytes] {from_new} bytes to the second link's "
              f"address natively; relays {st['relays']}; watchdog {st['watchdog']}")
        # The rest of the transfer (up to 8 MB) came natively to the new address.
        self.assertGreater(from_new, 0.5 * (base.SIZE_MB * 1_000_000 - at))
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    def test_g2_a_silent_client_follows_a_new_default_route_while_the_old_link_lingers(self):
        """The client waits for a server that thinks 3 s before it answers (quicstep-server
        --think-ms): its request is acknowledged, and it sends nothing more. Meanwhile the
        default routes move to a second link while the first stays up (Wi-Fi joins while
        cellular lingers; Ethernet beside Wi-Fi). The engine re-binds its relays, but the
        server answers the address it knows; the old relay's socket, kept while the old
        network lingers, takes that answer to the client, whose acknowledgement leaves from
        the new relay: the server migrates, and the response arrives on the second link.
        (With the old socket closed at once the answer met a closed port and the client,
        having nothing to say, never spoke again.)"""
        up2 = uplink.SecondUplink(self.lab)
        self.addCleanup(up2.remove)
        up2.add()
        self.client_native = self.client_native | up2.addresses
        self.quicstep_server("full", "--think-ms", "3000")
        cn, native, cp, channel = self.captures("linger")
        native2 = os.path.join(self.work, "linger-native2.pcap")
        cn2 = h.start_capture(self.procs, self.censor_ns, uplink.ROUTER_IF, native2)
        engine = self.start_engine()
        out_dir = os.path.join(self.work, "linger")
        os.makedirs(out_dir, exist_ok=True)
        cmd = ["timeout", "-k", "5", "30", "gtlsclient", "--quiet", "--exit-on-all-streams-close",
               f"--download={out_dir}", "--timeout=15s", self.srv_v4, "443",
               "https://open.test/bytes/2000000"]
        fetch = self.procs.start(self.ns, cmd, os.path.join(self.work, "linger-fetch.log"))
        try:
            time.sleep(1.5)  # the handshake, the request and its acknowledgement: then silence
            up2.prefer()
            code = fetch.wait(40)
        finally:
            up2.restore_first()
        got = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
        st = self.status()
        from_new = self.second_link_bytes(cn2, native2, (cn, cp), native, channel)
        print(f"\n[linger] {got} bytes, exit {code}; {from_new} bytes to the second link's "
              f"address; relays {st['relays']}; {st['loop']['relays_lingered']} sockets lingered, "
              f"{st['loop']['linger_datagrams']} datagrams there")
        self.assertEqual((code, got), (0, 2_000_000), "the response never reached the client")
        self.assertGreater(from_new, 1_000_000, "the server did not move to the second link")
        self.assertGreater(st["loop"]["linger_datagrams"], 0)
        self.assertIn("old relay sockets kept", self.quicstepctl_status())
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)


if __name__ == "__main__":
    unittest.main()
