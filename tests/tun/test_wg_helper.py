"""qs-wg-helper, the TUN engine's WireGuard channel, driven as the engine drives it (no
root network changes, no namespaces): two helpers peered over 127.0.0.1 in this namespace,
configured over their fd-4 UAPI; IPv4 and IPv6 packets written into helper A's fd 3 come
out of helper B's fd 3. The same peering runs for the arm64 build under qemu-aarch64-static
and for this machine's build under an Android-like seccomp filter. Also: the helper exits
when its engine's end of either socket closes, and on SIGTERM; UDP sockets reach the
protect socket unbound, before any datagram leaves them; a refused protect ends the helper;
bad UAPI is answered with an errno.

    python3 -m unittest -v tests.tun.test_wg_helper            (from the repository's root)
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from qs_support import artifacts, binaries
from qs_support.measure import measured
from tests.tun import android_seccomp, packets
from tests.tun.helper_process import Helper, genkey
from tests.tun.protect_server import ProtectServer

# Exit codes (client/tun/wg_helper/main.go).
EXIT_OK, EXIT_USAGE, EXIT_BAD_FD, EXIT_PROTECT, EXIT_UAPI_DROP = 0, 2, 3, 4, 5

A4, B4, A6, B6 = "10.99.0.1", "10.99.0.2", "fd99::1", "fd99::2"
SIGSYS = signal.SIGSYS


def have_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


class WorkDir(artifacts.KeepOnFailure):
    """A work directory per test class (logs, the protect socket), kept if a test failed;
    every helper a test starts is stopped after it."""

    @classmethod
    def setUpClass(cls):
        cls.work = artifacts.work_dir(f"tun-{cls.__name__}-")
        # Socket paths have 107 bytes at most: they live in a short directory of their own.
        cls.sockets = tempfile.mkdtemp(prefix="qs-tun-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.sockets, ignore_errors=True)
        artifacts.finish(cls.work, cls.any_failed)

    def setUp(self):
        self.helpers, self.servers = [], []

    def tearDown(self):
        for h in self.helpers:
            h.stop()
        for s in self.servers:
            s.close()
        if self.this_failed():
            for h in self.helpers:
                sys.stdout.write(f"\n--- {h.log_path}\n{h.log()}")

    def launcher(self):
        """The command that runs the helper, without its options."""
        return [binaries.path("qs-wg-helper")]

    def start(self, name, *options, **kw):
        h = Helper(self.launcher() + list(options), os.path.join(self.work, f"{name}.log"), **kw)
        self.helpers.append(h)
        return h

    def protect_server(self, name, answer=0):
        path = os.path.join(self.sockets, f"{name}.sock")
        if os.path.exists(path):
            os.unlink(path)
        s = ProtectServer(path, answer)
        self.servers.append(s)
        return s


class PeeringChecks(WorkDir):
    """Two helpers peered over loopback. A protects its sockets through a fake protect
    server (so SCM_RIGHTS is exercised on every build), B runs --no-protect."""

    def peer_pair(self, endpoint_host="127.0.0.1"):
        server = self.protect_server("protect-a")
        a = self.start("a", "--protect-socket", server.path)
        b = self.start("b", "--no-protect")
        (a_priv, a_pub), (b_priv, b_pub) = genkey(), genkey()
        self.assertEqual(b.set(f"private_key={b_priv}", "listen_port=0",
                               f"public_key={a_pub}", f"allowed_ip={A4}/32",
                               f"allowed_ip={A6}/128"), 0)
        b_port = int(b.get()["listen_port"][0])
        self.assertNotEqual(b_port, 0)
        host = f"[{endpoint_host}]" if ":" in endpoint_host else endpoint_host
        self.assertEqual(a.set(f"private_key={a_priv}", f"public_key={b_pub}",
                               f"endpoint={host}:{b_port}", f"allowed_ip={B4}/32",
                               f"allowed_ip={B6}/128"), 0)
        return a, b, server

    def check_crossing(self, a, b):
        v4 = packets.udp(A4, B4, 40000, 443, b"over the channel, v4")
        v6 = packets.udp(A6, B6, 40001, 443, b"over the channel, v6")
        started = time.time()
        t0 = time.monotonic()
        a.send_packet(v4)
        got = b.recv_packet(seconds=20)
        first_ms = (time.monotonic() - t0) * 1000
        self.assertEqual(got, v4, "the IPv4 packet did not come out of B's fd 3 intact")
        a.send_packet(v6)
        self.assertEqual(b.recv_packet(), v6, "the IPv6 packet did not come out of B's fd 3")
        # And back: B to A, a full-size packet at the default MTU (1420).
        big = packets.udp(B6, A6, 443, 40001, b"x" * (1420 - 48))
        b.send_packet(big)
        self.assertEqual(a.recv_packet(), big)
        for h in (a, b):
            peer = h.get()
            sec = int(peer["last_handshake_time_sec"][0])
            self.assertGreaterEqual(sec, int(started) - 1, f"{h.log_path}: no handshake in get=1")
            self.assertLessEqual(sec, time.time() + 1)
            self.assertGreater(int(peer["rx_bytes"][0]), 0)
        measured("first packet through, handshake included", round(first_ms, 1), "ms",
                 high=20000, test=self)
        return first_ms

    def test_ipv4_and_ipv6_packets_cross_and_the_handshake_shows(self):
        a, b, server = self.peer_pair()
        self.check_crossing(a, b)
        self.assertEqual(server.errors, [])
        self.assertGreaterEqual(len(server.sockets()), 1)


class PeeringNative(PeeringChecks, unittest.TestCase):
    """This machine's build."""

    @unittest.skipUnless(have_ipv6_loopback(), "no ::1 here")
    def test_peering_over_ipv6_loopback(self):
        a, b, _ = self.peer_pair(endpoint_host="::1")
        self.check_crossing(a, b)


class PeeringArm64Qemu(PeeringChecks, unittest.TestCase):
    """The arm64 build under qemu-aarch64-static, called explicitly (binfmt_misc may not be
    mounted)."""

    def launcher(self):
        qemu = shutil.which("qemu-aarch64-static")
        if qemu is None:
            self.fail("qemu-aarch64-static not found: scripts/install.sh installs qemu-user-static")
        return [qemu, binaries.path("qs-wg-helper-arm64")]

    def test_the_arm64_binary_is_arm64(self):
        with open(binaries.path("qs-wg-helper-arm64"), "rb") as f:
            head = f.read(20)
        self.assertEqual(head[:4], b"\x7fELF")
        self.assertEqual(int.from_bytes(head[18:20], "little"), 183, "e_machine is not EM_AARCH64")


@unittest.skipUnless(os.uname().machine == "x86_64", "the seccomp filter is written for x86_64")
class PeeringUnderAndroidSeccomp(PeeringChecks, unittest.TestCase):
    """This machine's build under a filter that traps set_robust_list, rseq and clone3
    (tests/tun/android_seccomp.py): a CGO_ENABLED=0 Go program makes none of those calls."""

    def launcher(self):
        return [sys.executable, android_seccomp.__file__, binaries.path("qs-wg-helper")]

    def test_the_filter_kills_a_glibc_program(self):
        # The control: a dynamically linked glibc program calls set_robust_list and rseq
        # while it starts, and dies of SIGSYS.
        true = shutil.which("true")
        run = subprocess.run([sys.executable, android_seccomp.__file__, true])
        self.assertEqual(run.returncode, -SIGSYS)

    def test_the_helper_runs_under_the_filter(self):
        a, b, _ = self.peer_pair()
        self.assertEqual(a.proc_status("Seccomp"), "2", "the helper is not under a filter")
        self.check_crossing(a, b)
        self.assertIsNone(a.poll())


class Lifecycle(WorkDir, unittest.TestCase):
    """Exits: the engine closing either socket, SIGTERM, bad fds, a bad command line."""

    def started(self):
        h = self.start("helper", "--no-protect")
        self.assertEqual(h.set(f"private_key={genkey()[0]}"), 0)
        return h

    def test_exits_when_the_engine_closes_the_packet_socket(self):
        h = self.started()
        h.packets.close()
        h.packets = None
        self.assertEqual(h.wait(10), EXIT_OK, h.log())
        self.assertIn("the engine closed the packet socket (fd 3)", h.log())

    def test_exits_when_the_engine_closes_the_uapi_socket(self):
        h = self.started()
        h.uapi.close()
        h.uapi = None
        self.assertEqual(h.wait(10), EXIT_OK, h.log())
        self.assertIn("the engine closed the UAPI socket (fd 4)", h.log())

    def test_exits_when_the_engine_is_killed(self):
        # The engine's ends belong to a process that dies: both sockets close at once.
        h = self.started()
        h.packets.close()
        h.uapi.close()
        h.packets = h.uapi = None
        self.assertEqual(h.wait(10), EXIT_OK, h.log())

    def test_sigterm_is_a_clean_exit(self):
        h = self.started()
        os.kill(h.pid, signal.SIGTERM)
        self.assertEqual(h.wait(10), EXIT_OK, h.log())
        self.assertIn("exiting on terminated", h.log())

    def test_without_fd_3_and_4_it_says_so(self):
        h = self.start("nofds", "--no-protect", fd3=False, fd4=False)
        self.assertEqual(h.wait(10), EXIT_BAD_FD)
        self.assertIn("fd 3 (packets) is not an inherited socket", h.log())

    def test_a_stream_socket_on_fd_3_is_refused(self):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with mine:
            h = self.start("streamfd3", "--no-protect", fd3=theirs)
            self.assertEqual(h.wait(10), EXIT_BAD_FD)
        self.assertRegex(h.log(), r"fd 3 \(packets\) is a socket of domain 1 type 1, "
                                  r"not AF_UNIX SOCK_SEQPACKET")

    def test_a_bad_command_line_quotes_the_value(self):
        h = self.start("usage", "--fwmark", "0x1g")
        self.assertEqual(h.wait(10), EXIT_USAGE)
        self.assertIn("`0x1g'", h.log())


class Uapi(WorkDir, unittest.TestCase):
    def test_bad_uapi_is_answered_with_an_errno(self):
        h = self.start("uapi", "--no-protect")
        einval = -22
        self.assertEqual(h.set("private_key=zz"), einval)
        self.assertEqual(h.set("no_such_key=1"), einval)
        self.assertEqual(h.set("public_key=" + "00" * 31), einval)
        self.assertEqual(h.set("listen_port=65536"), einval)
        errno, _ = h.uapi_request("get=1\nx")
        self.assertEqual(errno, einval, "a get with trailing bytes")
        # Still serving, and the good settings of a later request apply.
        self.assertEqual(h.set("listen_port=0", "fwmark=0"), 0)
        self.assertIn("listen_port", h.get())
        self.assertIsNone(h.poll())
        self.assertNotIn("panic", h.log())

    def test_an_unknown_operation_ends_the_helper_with_its_own_code(self):
        # wireguard-go's IpcHandle closes the conversation on an operation it does not know
        # (no errno is possible there); the helper then exits, saying why.
        h = self.start("uapi-op", "--no-protect")
        h.uapi.sendall(b"frob=1\n\n")
        self.assertEqual(h.wait(10), EXIT_UAPI_DROP, h.log())
        self.assertIn("invalid UAPI operation", h.log())
        self.assertIn("the UAPI conversation ended on an unknown operation", h.log())


class Protect(WorkDir, unittest.TestCase):
    """The protect protocol against a fake of the Java service's protect socket."""

    def test_every_udp_socket_is_protected_before_it_sends(self):
        server = self.protect_server("protect")
        a = self.start("a", "--protect-socket", server.path)
        # A's peer is a plain UDP socket of this test: it sees where A's datagrams come from.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
            sink.bind(("127.0.0.1", 0))
            sink.settimeout(10)
            a_priv, _ = genkey()
            _, peer_pub = genkey()
            self.assertEqual(a.set(f"private_key={a_priv}", f"public_key={peer_pub}",
                                   f"endpoint=127.0.0.1:{sink.getsockname()[1]}",
                                   f"allowed_ip={B4}/32"), 0)
            a.send_packet(packets.udp(A4, B4, 1, 2, b"x"))  # starts a handshake
            initiation, source = sink.recvfrom(2048)
        self.assertEqual(initiation[0], 1, "not a WireGuard handshake initiation")
        received = server.sockets()
        self.assertEqual(server.errors, [])
        self.assertTrue(received, "no socket reached the protect server")
        for r in received:
            self.assertEqual(r["type"], socket.SOCK_DGRAM)
            self.assertEqual(r["port_on_arrival"], 0,
                             "a socket reached the protect server already bound (it could "
                             "have sent before it was protected)")
        self.assertIn(source[1], server.bound_ports(),
                      "A sent from a socket the protect server never received")
        families = {r["family"] for r in received}
        self.assertIn(socket.AF_INET, families)

    def test_a_new_listen_port_protects_the_new_sockets(self):
        server = self.protect_server("protect-rebind")
        a = self.start("a", "--protect-socket", server.path)
        before = len(server.sockets())
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.assertEqual(a.set(f"listen_port={port}"), 0)
        after = server.sockets()[before:]
        self.assertTrue(after, "the re-bind's sockets were not protected")
        self.assertTrue(all(r["port_on_arrival"] == 0 for r in after))
        self.assertIn(port, server.bound_ports())

    def test_a_refused_protect_fails_the_helper(self):
        server = self.protect_server("refuse", answer=1)
        a = self.start("refused", "--protect-socket", server.path)
        self.assertEqual(a.wait(10), EXIT_PROTECT, a.log())
        self.assertIn("refused to protect the socket (answer 1)", a.log())

    def test_an_unreachable_protect_socket_fails_the_helper(self):
        a = self.start("unreachable", "--protect-socket", os.path.join(self.sockets, "none.sock"))
        self.assertEqual(a.wait(10), EXIT_PROTECT, a.log())
        self.assertIn("cannot reach the protect socket", a.log())

    @unittest.skipUnless(os.geteuid() == 0, "SO_MARK needs CAP_NET_ADMIN")
    def test_fwmark_marks_the_sockets(self):
        a = self.start("mark", "--fwmark", "0x5157")
        self.assertEqual(a.set("listen_port=0"), 0)
        port = a.get()["listen_port"][0]
        ss = subprocess.run(["ss", "-u", "-a", "-n", "-e", f"sport = :{port}"],
                            capture_output=True, text=True, check=True).stdout
        self.assertIn("fwmark:0x5157", ss)
        # A UAPI fwmark may repeat the protecting mark, not change it.
        self.assertEqual(a.set(f"fwmark={0x5157}"), 0)
        self.assertNotEqual(a.set("fwmark=1"), 0)


if __name__ == "__main__":
    unittest.main()
