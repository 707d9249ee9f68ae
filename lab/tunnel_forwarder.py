#!/usr/bin/env python3
"""A minimal layer-3 tunnel for the lab: the stand-in for "a program that brings up a TUN"
(sing-box, Xray, Hysteria2, openconnect) behind quicstepd's `channel_kind = "interface"`.

One end per host, each with a TUN device of its own; every IP packet the kernel writes into
one end's TUN leaves as one UDP datagram to the other end, which writes it into its TUN:

    client:    tunnel_forwarder.py --tun qs-tun0 --connect 198.18.3.2:40001
    provider:  tunnel_forwarder.py --tun qs-ptun0 --listen 40001

The server end answers the address it last heard from. No encryption and no framing: a lab
tool, never a tunnel for real use. The caller gives the devices addresses and routes (`ip`);
the devices vanish when the process ends (they are not persistent). Counts are printed on
SIGTERM/SIGINT.
"""
import argparse
import fcntl
import os
import selectors
import signal
import socket
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def endpoint(text):
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tun", required=True, help="the TUN device to create")
    end = ap.add_mutually_exclusive_group(required=True)
    end.add_argument("--connect", type=endpoint, metavar="HOST:PORT", help="client end")
    end.add_argument("--listen", type=int, metavar="PORT", help="server end (all addresses)")
    args = ap.parse_args()

    tun = open_tun(args.tun)
    if args.connect:
        family = socket.AF_INET6 if ":" in args.connect[0] else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        sock.connect(args.connect)
        peer = args.connect
    else:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", args.listen))
        peer = None
    sock.setblocking(False)
    counts = {"tun_to_udp": 0, "udp_to_tun": 0, "dropped": 0}

    def stop(signum, _frame):
        print(f"tunnel_forwarder {args.tun}: {counts}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sel = selectors.DefaultSelector()
    sel.register(tun, selectors.EVENT_READ, "tun")
    sel.register(sock, selectors.EVENT_READ, "udp")
    print(f"tunnel_forwarder {args.tun}: up", flush=True)
    while True:
        for key, _ in sel.select():
            for _ in range(64):
                try:
                    if key.data == "tun":
                        packet = os.read(tun, 65535)
                        if peer is None:  # the server end before the client spoke
                            counts["dropped"] += 1
                            continue
                        if args.connect:
                            sock.send(packet)
                        else:
                            sock.sendto(packet, peer)
                        counts["tun_to_udp"] += 1
                    else:
                        packet, sender = sock.recvfrom(65535)
                        if not args.connect:
                            peer = sender
                        os.write(tun, packet)
                        counts["udp_to_tun"] += 1
                except BlockingIOError:
                    break
                except OSError:
                    counts["dropped"] += 1  # a refused datagram, a packet the TUN refused
                    break


if __name__ == "__main__":
    main()
