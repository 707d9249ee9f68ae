"""Plays the Android app's VpnService for qs-engine in a lab namespace (root; run inside the
namespace with `ip netns exec`), as client/android's QuicstepVpnService does on a phone:

- establish(): a TUN device (not persistent: it lives as long as this process holds it) with
  the tunnel's addresses, and every route of the namespace into it, except for sockets
  marked MARK (a policy rule `not fwmark MARK lookup TABLE`), which is how Android's netd
  lets protected sockets use the real network;
- protect(): a protect server on PROTECT (shadowsocks-android's protect_path protocol) that
  marks each socket it receives with MARK;
- the supervisor's TUN handoff: the TUN's descriptor sent to the engine's TUN socket
  (retrying for 10 s while it does not listen), again on every SIGUSR1 (a restarted engine).

    python3 -m tests.tun.vpn_service_standin --tun qsa0 --address 10.0.0.2/32 ...
        --tun-socket DIR/tun.sock --protect-socket DIR/protect.sock

Prints one JSON line per event on stdout ("ready", "sent", "send_failed"); exits on SIGTERM,
removing its rules (the TUN goes with its descriptor). A dead engine therefore meets a TUN
that nobody reads: no traffic, no leak, as on a phone."""
import argparse
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from tests.tun.protect_server import ProtectServer

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def say(**event):
    print(json.dumps(event), flush=True)


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def routes(args, add):
    """VpnService's routes: 0.0.0.0/0 and ::/0 into the TUN for whatever is not protected."""
    verb = "add" if add else "del"
    for fam in ("-4", "-6"):
        ip(fam, "rule", verb, "not", "fwmark", str(args.mark), "lookup", str(args.table),
           "priority", "30500", check=add)
    if add:
        for a in args.address:
            ip("addr", "add", a, "dev", args.tun)
        # No link-local address (as quicstep-tun's TUN): the kernel's own IPv6 chatter
        # (router solicitations, MLD reports) would go to the channel and muddle the byte
        # counts the test compares.
        ip("link", "set", args.tun, "addrgenmode", "none")
        ip("link", "set", args.tun, "mtu", str(args.mtu), "up")
        for fam in ("-4", "-6"):
            ip(fam, "route", "add", "default", "dev", args.tun, "table", str(args.table))


def send_tun(tun_fd, path, seconds=10):
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(5)
                s.connect(path)
                socket.send_fds(s, [b"\x00"], [tun_fd])
                answer = s.recv(1)
            if answer == b"\x00":
                say(event="sent")
                return True
            say(event="send_failed", why=f"answer {answer!r}")
            return False
        except OSError as e:
            if time.monotonic() > deadline:
                say(event="send_failed", why=str(e))
                return False
            time.sleep(0.1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tun", required=True)
    p.add_argument("--address", action="append", required=True, help="the tunnel's, repeatable")
    p.add_argument("--mtu", type=int, default=1420)
    p.add_argument("--mark", type=int, default=51831)
    p.add_argument("--table", type=int, default=51831)
    p.add_argument("--tun-socket", required=True)
    p.add_argument("--protect-socket", required=True)
    p.add_argument("--refuse-protect", action="store_true", help="answer 1 to every protect")
    args = p.parse_args()

    stop = threading.Event()
    resend = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: resend.set())
    tun_fd = open_tun(args.tun)
    if os.path.exists(args.protect_socket):  # an earlier stand-in's
        os.unlink(args.protect_socket)
    protect = ProtectServer(args.protect_socket, answer=1 if args.refuse_protect else 0,
                            mark=args.mark)
    try:
        routes(args, True)
        say(event="ready")
        resend.set()
        while not stop.is_set():
            if resend.is_set():
                resend.clear()
                send_tun(tun_fd, args.tun_socket)
            stop.wait(0.1)
    finally:
        routes(args, False)
        protect.close()
        os.unlink(args.protect_socket)
        os.close(tun_fd)
        say(event="stopped", protected=len(protect.received))
    return 0


if __name__ == "__main__":
    sys.exit(main())
