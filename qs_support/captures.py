"""Packet captures as the lab's proof: tcpdump on a link, read back with quicstep-inspect
(JSON per packet), and what must never appear on the native path."""
import ipaddress
import json
import re
import struct
import subprocess
import time

from qs_support import binaries


def started(path, seconds=10):
    """Waits until the tcpdump writing `path` (its log at path + ".log") printed
    "listening on" (its socket is bound); False if it did not within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        with open(path + ".log") as f:
            if "listening on" in f.read():
                return True
        time.sleep(0.05)
    return False


def start(procs, netns, iface, path, expression=None):
    """tcpdump on `iface` in `netns` writing `path` (a qs_support.procs.Procs tracks it);
    only the packets `expression` (a pcap filter) matches, if given."""
    p = procs.start(netns, ["tcpdump", "-i", iface, "-w", path, "-n", "-s", "0",
                            "-B", "131072"] + ([expression] if expression else []),
                    path + ".log")
    if started(path):
        return p
    raise AssertionError(f"tcpdump on {netns}/{iface} did not start")


def drops(pcap_path):
    """Packets tcpdump reported dropped by the kernel (its log after it stopped); -1 if it
    did not say."""
    with open(pcap_path + ".log") as f:
        m = re.search(r"(\d+) packets dropped by kernel", f.read())
    return int(m.group(1)) if m else -1


def link_header_len(pcap_path):
    """Bytes of link-layer header per packet in a classic pcap file (Ethernet 14, raw IP 0,
    Linux cooked v1 16 / v2 20)."""
    with open(pcap_path, "rb") as f:
        hdr = f.read(24)
    magic = hdr[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack(endian + "I", hdr[20:24])[0]
    return {1: 14, 101: 0, 12: 0, 228: 0, 229: 0, 113: 16, 276: 20}.get(linktype, 0)


def inspect(pcap_path):
    """Every packet of a capture as quicstep-inspect reads it (a dict per packet), with
    "ip_len": its IP bytes."""
    out = subprocess.run([binaries.path("quicstep-inspect"), pcap_path], capture_output=True,
                         text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"quicstep-inspect {pcap_path}: {out.stderr}")
    link = link_header_len(pcap_path)
    packets = []
    for line in out.stdout.splitlines():
        if line.strip():
            p = json.loads(line)
            p["ip_len"] = p.get("wire_len", 0) - link
            packets.append(p)
    return packets


def leaks(packets, client_addrs):
    """Packets from the client that must never be on the native path: TCP, DNS, QUIC long
    headers, anything with an SNI. Returns [(kind, packet)]."""
    bad = []
    for p in packets:
        if p.get("src") not in client_addrs:
            continue
        if p.get("proto") == "tcp":
            bad.append(("tcp", p))
        elif "dns" in p or 53 in (p.get("sport"), p.get("dport")):
            bad.append(("dns", p))
        elif any(q.get("form") == "long" for q in p.get("quic", [])):
            bad.append(("quic_long_header", p))
        elif p.get("tls", {}).get("sni"):
            bad.append(("sni", p))
    return bad


def quic_bytes(packets, server, port=443):
    """IP bytes of UDP packets between anyone and server:port, both directions."""
    return sum(p["ip_len"] for p in packets if p.get("proto") == "udp" and
               ((p.get("dst") == server and p.get("dport") == port) or
                (p.get("src") == server and p.get("sport") == port)))


def unicast_bytes_from(packets, sources):
    """IP bytes of the packets from `sources`, without those to multicast groups (the
    kernel's own link-scope control on a device, such as the MLD reports it sends when the
    channel's device comes up, which no application routed there)."""
    return sum(p["ip_len"] for p in packets if p.get("src") in sources and
               not ipaddress.ip_address(p.get("dst", "0.0.0.0")).is_multicast)
