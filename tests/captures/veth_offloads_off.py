#!/usr/bin/env python3
"""Turn off checksum, segmentation and GRO offloads on a network interface.

Used by make_captures.sh so that a capture on a veth shows packets as they
would be on a wire: one IP packet per frame (no TSO/GSO/GRO super-packets)
and correct UDP/TCP checksums (no CHECKSUM_PARTIAL packets).  It does what
`ethtool -K IF tx off sg off tso off gso off gro off ...` does, through the
SIOCETHTOOL ioctl, so the capture script needs no ethtool package.

Usage (in the interface's network namespace): veth_offloads_off.py IFNAME
Prints the features it changed and exits non-zero if one stays on.
"""
import ctypes
import fcntl
import socket
import struct
import sys

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSSET_INFO = 0x37
ETHTOOL_GFEATURES = 0x3A
ETHTOOL_SFEATURES = 0x3B
ETH_SS_FEATURES = 4
ETH_GSTRING_LEN = 32

# Features to switch off (names as `ethtool -k` prints them).
OFF = [
    "tx-checksum-ip-generic", "tx-checksum-ipv4", "tx-checksum-ipv6",
    "tx-scatter-gather",
    "tx-tcp-segmentation", "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation",
    "tx-udp-segmentation", "tx-generic-segmentation", "tx-gso-partial",
    "rx-gro", "rx-gro-list", "rx-udp-gro-forwarding", "rx-gro-hw", "rx-lro",
]


def ethtool(sock, ifname, buf):
    ifr = struct.pack("16sP", ifname.encode(), ctypes.addressof(buf))
    ifr += b"\0" * (40 - len(ifr))
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifr)


def feature_names(sock, ifname):
    info = ctypes.create_string_buffer(16 + 4)
    struct.pack_into("=IIQ", info, 0, ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_FEATURES)
    ethtool(sock, ifname, info)
    (count,) = struct.unpack_from("=I", info, 16)
    strings = ctypes.create_string_buffer(12 + count * ETH_GSTRING_LEN)
    struct.pack_into("=III", strings, 0, ETHTOOL_GSTRINGS, ETH_SS_FEATURES, count)
    ethtool(sock, ifname, strings)
    raw = strings.raw[12:]
    return [raw[i * ETH_GSTRING_LEN:(i + 1) * ETH_GSTRING_LEN].split(b"\0")[0].decode()
            for i in range(count)]


def active_features(sock, ifname, count):
    blocks = (count + 31) // 32
    buf = ctypes.create_string_buffer(8 + blocks * 16)
    struct.pack_into("=II", buf, 0, ETHTOOL_GFEATURES, blocks)
    ethtool(sock, ifname, buf)
    active = set()
    for b in range(blocks):
        _avail, _req, act, _never = struct.unpack_from("=IIII", buf, 8 + b * 16)
        for bit in range(32):
            if act & (1 << bit):
                active.add(b * 32 + bit)
    return active


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ifname = sys.argv[1]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    names = feature_names(sock, ifname)
    index = {n: i for i, n in enumerate(names)}
    blocks = (len(names) + 31) // 32
    valid = [0] * blocks
    for name in OFF:
        if name in index:
            i = index[name]
            valid[i // 32] |= 1 << (i % 32)
    buf = ctypes.create_string_buffer(8 + blocks * 8)
    struct.pack_into("=II", buf, 0, ETHTOOL_SFEATURES, blocks)
    for b in range(blocks):
        struct.pack_into("=II", buf, 8 + b * 8, valid[b], 0)  # requested: all off
    try:
        ethtool(sock, ifname, buf)
    except OSError as e:  # positive return (some not changeable) is not an error
        sys.exit(f"{ifname}: ETHTOOL_SFEATURES failed: {e}")
    active = active_features(sock, ifname, len(names))
    still_on = [n for n in OFF if n in index and index[n] in active]
    if still_on:
        sys.exit(f"{ifname}: offloads still on: {' '.join(still_on)}")
    print(f"{ifname}: offloads off: "
          + " ".join(n for n in OFF if n in index))


if __name__ == "__main__":
    main()
