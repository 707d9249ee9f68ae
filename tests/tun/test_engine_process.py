"""qs-engine as a process, driven as the Android app drives it, in each build a phone may
run: this machine's, the static-pie arm64 build under qemu-aarch64-static (with the arm64
WireGuard helper), and the static-pie build of this machine under an Android-like seccomp
filter (tests/tun/android_seccomp.py: set_robust_list, rseq and clone3 trap). No root, no
namespace: the "TUN" is one end of a SOCK_SEQPACKET pair (one IP packet per message, as a
TUN descriptor gives), handed to the engine over its TUN socket by SCM_RIGHTS; a protect
server written in Python answers the engine's protect requests; the channel's far end is a
second WireGuard helper (the provider) on 127.0.0.1.

The TUN loop: a DNS query written into the TUN comes out of the provider's side of the
WireGuard channel unchanged, and the answer written there comes back out of the TUN; a
malformed packet is counted and harmless; the status answers in quicstepctl's vocabulary;
the helper's socket was protected; SIGTERM ends the engine cleanly and removes its sockets.

    python3 -m unittest -v tests.tun.test_engine_process          (from the repository's root)
"""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import unittest

from qs_support import binaries
from qs_support.procs import wait_for
from tests.tun import android_seccomp, packets
from tests.tun.helper_process import Helper, genkey
from tests.tun.protect_server import ProtectServer
from tests.tun.test_wg_helper import WorkDir

APP4, APP6 = "10.98.0.2", "fd98::2"        # the TUN's (tunnel) addresses
RESOLVER4 = "10.98.0.53"


def dns_query(name="open.test", ident=0x5151):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", 1, 1)


def b64(hex_key):
    import base64
    return base64.b64encode(bytes.fromhex(hex_key)).decode()


class EngineProcessChecks(WorkDir):
    """One engine per test against one provider helper. Subclasses say how to run them."""

    def engine_launcher(self):
        return [binaries.path("qs-engine")]

    def helper_path(self):
        return binaries.path("qs-wg-helper")

    def start_engine(self):
        provider = self.start("provider", "--no-protect")
        (e_priv, e_pub), (p_priv, p_pub) = genkey(), genkey()
        self.assertEqual(provider.set(f"private_key={p_priv}", "listen_port=0",
                                      f"public_key={e_pub}", f"allowed_ip={APP4}/32",
                                      f"allowed_ip={APP6}/128"), 0)
        port = int(provider.get()["listen_port"][0])
        conf = os.path.join(self.sockets, "channel.conf")
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"[Interface]\nPrivateKey = {b64(e_priv)}\nAddress = {APP4}/32, {APP6}/128\n\n"
                    f"[Peer]\nPublicKey = {b64(p_pub)}\nEndpoint = 127.0.0.1:{port}\n"
                    "AllowedIPs = 0.0.0.0/0, ::/0\n")
        protect = self.protect_server("protect")
        tun_sock = os.path.join(self.sockets, "tun.sock")
        control = os.path.join(self.sockets, "control.sock")
        log = os.path.join(self.work, "engine.log")
        with open(log, "ab") as out:
            engine = subprocess.Popen(
                self.engine_launcher() + ["--tun-socket", tun_sock, "--protect-socket",
                                          protect.path, "--control-socket", control,
                                          "--wg-config", conf, "--wg-helper", self.helper_path(),
                                          "--helper-log", log + ".helper"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        self.addCleanup(self.stop_engine, engine)
        # The app's side: the TUN (here a packet socket pair) sent once the engine listens.
        app_tun, engine_tun = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(app_tun.close)
        self.assertTrue(wait_for(lambda: os.path.exists(tun_sock), engine, seconds=20),
                        self.log_of(log))
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(tun_sock)
            socket.send_fds(s, [b"\x00"], [engine_tun.fileno()])
            self.assertEqual(s.recv(1), b"\x00", "the engine did not take the TUN")
        engine_tun.close()
        self.assertTrue(wait_for(lambda: os.path.exists(control), engine, seconds=20),
                        self.log_of(log))
        self.check_running(engine)
        return engine, app_tun, provider, protect, control, log

    def check_running(self, engine):
        """What a subclass checks of the running engine (its /proc entry)."""

    @staticmethod
    def log_of(path):
        with open(path, errors="replace") as f:
            return f.read()[-3000:]

    def stop_engine(self, engine):
        if engine.poll() is None:
            os.kill(engine.pid, signal.SIGKILL)
            engine.wait(10)

    @staticmethod
    def status(control):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(control)
            s.sendall(b"status\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return json.loads(data)

    def test_the_tun_loop_carries_dns_through_the_channel_both_ways(self):
        engine, app_tun, provider, protect, control, log = self.start_engine()
        query = packets.udp(APP4, RESOLVER4, 40053, 53, dns_query())
        app_tun.send(b"\x45garbage")  # malformed: counted, not fatal
        got = None
        deadline = time.monotonic() + 30
        while got is None and time.monotonic() < deadline:  # the first one waits for WireGuard's handshake
            app_tun.send(query)
            got = provider.recv_packet(seconds=3)
        self.assertEqual(got, query, f"the query did not reach the provider\n{self.log_of(log)}")
        answer = packets.udp(RESOLVER4, APP4, 53, 40053, dns_query(ident=0x5151) + b"\xc0\x0c")
        provider.send_packet(answer)
        app_tun.settimeout(10)
        while True:
            back = app_tun.recv(65536)
            if back == answer:
                break
        v6 = packets.udp(APP6, "fd98::53", 40054, 53, dns_query(ident=0x6666))
        app_tun.send(v6)
        self.assertEqual(provider.recv_packet(seconds=10), v6)
        st = self.status(control)
        print(f"\n  status: channel {st['paths']['channel']}, engine {st['engine']['malformed']} "
              f"malformed, protected sockets {len(protect.sockets())}")
        self.assertGreaterEqual(st["paths"]["channel"]["packets"], 3)
        self.assertGreaterEqual(st["engine"]["malformed"], 1)
        self.assertGreaterEqual(len(protect.sockets()), 1, "the helper's socket was not protected")
        self.assertEqual(protect.errors, [])
        # quicstepctl shows the engine's status in words too.
        ctl = subprocess.run([binaries.path("quicstepctl"), "--socket", control, "status"],
                             capture_output=True, text=True, timeout=10)
        self.assertEqual(ctl.returncode, 0, ctl.stderr)
        for words in ("TUN engine; WireGuard helper pid", "channel: out 3 packets",
                      "relays: 0 open of", "1 malformed"):
            self.assertIn(words, ctl.stdout)
        self.assertIsNone(engine.poll())
        os.kill(engine.pid, signal.SIGTERM)
        self.assertEqual(engine.wait(20), 0, self.log_of(log))
        self.assertFalse(os.path.exists(control), "the control socket was left behind")


class EngineNative(EngineProcessChecks, unittest.TestCase):
    """This machine's build (the one the lab tests run)."""


class EngineArm64Qemu(EngineProcessChecks, unittest.TestCase):
    """The static-pie arm64 engine and the arm64 helper, both under qemu-aarch64-static
    (called explicitly: binfmt_misc may not be mounted, so the helper is started through a
    script that calls qemu)."""

    def engine_launcher(self):
        qemu = shutil.which("qemu-aarch64-static")
        if qemu is None:
            self.fail("qemu-aarch64-static not found: scripts/install.sh installs qemu-user-static")
        self.qemu = qemu
        return [qemu, binaries.path("qs-engine-arm64")]

    def helper_path(self):
        wrapper = os.path.join(self.sockets, "qs-wg-helper-arm64")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\nexec {self.qemu} {binaries.path('qs-wg-helper-arm64')} \"$@\"\n")
        os.chmod(wrapper, 0o755)
        return wrapper

    def test_the_engine_is_a_static_arm64_executable(self):
        with open(binaries.path("qs-engine-arm64"), "rb") as f:
            head = f.read(64)
        self.assertEqual(head[:4], b"\x7fELF")
        self.assertEqual(int.from_bytes(head[18:20], "little"), 183, "e_machine is not EM_AARCH64")
        self.assertEqual(int.from_bytes(head[16:18], "little"), 3, "not a PIE (ET_DYN)")
        out = subprocess.run(["file", "-b", binaries.path("qs-engine-arm64")], capture_output=True,
                             text=True).stdout if shutil.which("file") else "static-pie"
        self.assertIn("static-pie", out)


@unittest.skipUnless(os.uname().machine == "x86_64", "the seccomp filter is written for x86_64")
class EngineUnderAndroidSeccomp(EngineProcessChecks, unittest.TestCase):
    """The static-pie engine of this machine under the filter; its helper (a CGO_ENABLED=0
    Go program) inherits the filter. The entry shim (client/tun/static/seccomp_entry.c) is
    what lets glibc start: the same program without it dies of SIGSYS."""

    def engine_launcher(self):
        return [sys.executable, android_seccomp.__file__, binaries.path("qs-engine-static")]

    def check_running(self, engine):
        with open(f"/proc/{engine.pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        self.assertEqual(fields["Seccomp"].strip(), "2", "the engine is not under the filter")

    def test_the_dynamic_engine_dies_under_the_filter(self):
        # The control: the ordinary build, without the shim, is killed as glibc starts.
        run = subprocess.run([sys.executable, android_seccomp.__file__,
                              binaries.path("qs-engine"), "--version"], capture_output=True)
        self.assertEqual(run.returncode, -signal.SIGSYS)

    def test_the_static_engine_runs_under_the_filter(self):
        run = subprocess.run(self.engine_launcher() + ["--version"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("qs-engine", run.stdout)


if __name__ == "__main__":
    unittest.main()
