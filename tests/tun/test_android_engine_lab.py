"""qs-engine, the Android frontend, in the lab (root): a stand-in for the app's VpnService
(tests/tun/vpn_service_standin.py) owns the TUN and the namespace's routes into it, marks
every socket sent to its protect socket (as netd does for VpnService.protect), and hands
the TUN's descriptor to the engine over its TUN socket, as client/android does on a phone.
The engine opens no device and sets no route; every socket it and its WireGuard helper use
must come through protect, or its packets would loop into the TUN.

Same proofs as quicstep-tun's lab test (test_tun_engine_lab.py, whose lab setup this
reuses): Debian's gtlsclient fetches 10 MB over HTTP/3, v4 and v6; on the native link no
DNS, TCP or QUIC long header from the client and >= 99% of the QUIC bytes; the engine's
channel bytes equal the provider's capture (2%); every relay was protected. kill -9 of the
engine mid-transfer: no leak while the TUN has no reader, and a new engine given the TUN
again (the supervisor's SIGUSR1 here) works. A protect server that refuses: nothing leaves
natively (the helper cannot protect its socket, so there is no channel and no fetch), and
the engine stays up."""
import json
import os
import signal
import time
import unittest

from qs_support import binaries
from qs_support.procs import wait_for
from tests.lab import lab_helpers
from tests.tun import test_tun_engine_lab as base

TUN = "qsa0"
MARK = TABLE = 51831


class AndroidEngineLab(base.TunEngineLab):
    # quicstep-tun's own tests are test_tun_engine_lab's; this class reuses its lab only.
    test_1_fetch_v4_and_v6_handshakes_through_the_channel_data_native = None
    test_1b_a_second_engine_leaves_the_running_one_alone = None  # quicstep-tun's own lock
    test_2_kill9_helper_mid_transfer_engine_restarts_it = None
    test_3_kill9_engine_mid_transfer_blocks_then_restarts = None
    test_4_a_family_without_a_tunnel_address_is_blocked_not_native = None
    test_5_heals_what_other_tools_remove = None  # Linux's routes: Android's VpnService owns them
    test_6_a_named_endpoint_survives_a_kill9_of_the_engine = None  # the app resolves names
    test_7_a_deleted_tun_comes_back_mid_transfer = None  # VpnService's TUN is the app's
    # The health comes from EngineRunner, which both frontends share: test_8 runs it once.
    test_8_the_channel_health_says_when_wireguard_is_blocked = None
    test_9_the_fast_path_sends_a_confirmed_uploads_short_headers_past_the_engine = None  # Linux's

    def start_service(self, refuse=False):
        self.tun_sock = os.path.join(self.work, "engine-tun.sock")
        self.protect_sock = os.path.join(self.work, "protect.sock")
        log = os.path.join(self.work, f"service-{len(os.listdir(self.work))}.log")
        cmd = ["python3", "-m", "tests.tun.vpn_service_standin", "--tun", TUN,
               "--address", f"{self.tunnel_v4}/32", "--address", f"{self.tunnel_v6}/128",
               "--mark", str(MARK), "--table", str(TABLE), "--tun-socket", self.tun_sock,
               "--protect-socket", self.protect_sock] + (["--refuse-protect"] if refuse else [])
        service = self.procs.start(self.ns, cmd, log, cwd=os.getcwd())
        self.addCleanup(self.procs.stop, service, sig=signal.SIGTERM, timeout=15)
        def ready():
            with open(log) as f:
                return '"ready"' in f.read()
        if not wait_for(ready, service, seconds=15):
            with open(log) as f:
                self.fail(f"the VpnService stand-in did not come up: {f.read()[-2000:]}")
        return service, log

    def start_engine(self, wg_conf=None, wait_channel=True):
        log = os.path.join(self.work, f"qs-engine-{len(os.listdir(self.work))}.log")
        p = self.procs.start(self.ns, [binaries.path("qs-engine"), "--tun-socket", self.tun_sock,
                                       "--protect-socket", self.protect_sock,
                                       "--control-socket", self.sock,
                                       "--wg-config", wg_conf or self.wg_conf,
                                       "--helper-log", log + ".helper"], log)
        self.addCleanup(self.procs.stop, p)
        self.engine_log = log
        if wait_channel:
            wait_for(lambda: os.path.exists(self.sock), p, seconds=15)
            wait_for(lambda: self.dig() != "", p, seconds=15)
        return p

    @staticmethod
    def events(log):
        with open(log) as f:
            return [json.loads(line) for line in f if line.startswith("{")]

    def test_a_fetch_through_the_app_tun_handshakes_channel_data_native(self):
        service, service_log = self.start_service()
        cn, native, cp, channel = self.captures("android-fetch")
        engine = self.start_engine()
        self.assertIn({"event": "sent"}, self.events(service_log))
        for dest, name in ((self.srv_v4, "android-v4"), (self.srv_v6, "android-v6")):
            self.fetch(dest, name)
        time.sleep(3)  # late packets and their ICMP errors settle (see test_tun_engine_lab)
        st = self.status()
        npk, cpk = self.read_captures((cn, cp), native, channel)
        for server in (self.srv_v4, self.srv_v6):
            nat_b, ch_b = base.h.quic_bytes(npk, server), base.h.quic_bytes(cpk, server)
            share = nat_b / max(1, nat_b + ch_b)
            print(f"\n[{server}] native share {share:.4f} ({nat_b} native / {ch_b} channel)")
            self.assertGreaterEqual(share, 0.99)
        self.assertTrue(any(p.get("dns") for p in cpk), "the DNS lookup did not use the channel")
        reported = st["paths"]["channel"]["bytes"]
        at_provider = sum(p["ip_len"] for p in cpk if p.get("src") in self.tunnel_addrs)
        print(f"channel bytes reported {reported}, at the provider {at_provider}; relays "
              f"{st['relays']}; loop {st['loop']}")
        self.assertLessEqual(abs(reported - at_provider), 0.02 * at_provider)
        self.assertEqual(st["loop"]["protect_failed"], 0)
        # Every relay and the helper's socket(s) came through protect: the stand-in marked
        # them; an unprotected relay would have looped into the TUN (no native bytes).
        self.assertEqual(self.procs.stop(engine, sig=signal.SIGTERM, timeout=15), 0)
        self.assertFalse(os.path.exists(self.sock), "the control socket was left behind")
        self.procs.stop(service, sig=signal.SIGTERM, timeout=15)
        protected = self.events(service_log)[-1]["protected"]
        print(f"sockets protected: {protected}")
        self.assertGreaterEqual(protected, st["relays"]["opened"] + 1)

    def test_b_kill9_engine_mid_transfer_no_leak_then_a_new_engine_gets_the_tun(self):
        service, service_log = self.start_service()
        self._kill_mid_transfer("android-kill-engine", lambda engine: engine.pid)
        # The TUN is the app's: with no engine reading it, lookups go nowhere.
        self.assertEqual(self.dig(), "", "a lookup was answered with the engine dead")
        os.unlink(self.sock)  # what a kill -9 leaves; the new engine replaces it anyway
        os.kill(service.pid, signal.SIGUSR1)  # the supervisor resends the TUN
        engine = self.start_engine()
        self.fetch(self.srv_v4, "android-after-engine")
        self.assertEqual(sum(e == {"event": "sent"} for e in self.events(service_log)), 2)
        self.procs.stop(engine, sig=signal.SIGTERM, timeout=15)

    def test_c_refused_protect_nothing_leaves_natively_and_the_engine_stays(self):
        self.start_service(refuse=True)
        cn, native, cp, channel = self.captures("android-refused")
        # The helper cannot protect its socket either: it exits (protect.go), and the engine
        # keeps starting it again (backing off); so there is no channel, and nothing may
        # leave natively.
        engine = self.start_engine(wait_channel=False)
        time.sleep(1)
        out_dir, cmd = self.fetch_cmd(self.srv_v4, "android-refused")
        cmd[3] = "10"
        lab_helpers.in_host(self.lab, "client", *cmd, check=False, timeout=30)
        self.assertFalse(os.path.exists(os.path.join(out_dir, f"{base.SIZE_MB}M.bin")))
        self.assertEqual(self.dig(), "", "a lookup was answered without a channel")
        self.read_captures((cn, cp), native, channel)  # asserts: no leak on the native link
        self.assertIsNone(engine.poll(), "the engine died when protect was refused")
        with open(self.engine_log) as f:
            self.assertIn("trying again", f.read(), "the engine does not say it retries")
        self.assertEqual(self.procs.stop(engine, sig=signal.SIGTERM, timeout=15), 0)


if __name__ == "__main__":
    unittest.main()
