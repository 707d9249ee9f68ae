#!/usr/bin/env python3
"""Send a fixed set of DNS queries over UDP and TCP (for dns_queries.pcap).

Usage: dns_queries.py SERVER_IPv4 SERVER_IPv6
Queries, ids and source ports are fixed so that the capture is predictable.
Exits non-zero if a query gets no answer or an answer with another id.
"""
import socket
import struct
import sys

A, AAAA = 1, 28

# (transport, family, query id, name, type, client source port)
QUERIES = [
    ("udp", socket.AF_INET, 0x5101, "blocked.test", A, 53001),
    ("udp", socket.AF_INET, 0x5102, "blocked.test", AAAA, 53002),
    ("udp", socket.AF_INET, 0x5103, "www.open.test", A, 53003),
    ("udp", socket.AF_INET, 0x5104, "www.open.test", AAAA, 53004),
    ("tcp", socket.AF_INET, 0x5105, "www.blocked.test", A, 53005),
    ("tcp", socket.AF_INET, 0x5106, "www.open.test", AAAA, 53006),
    ("udp", socket.AF_INET6, 0x5107, "blocked.test", AAAA, 53007),
    ("tcp", socket.AF_INET6, 0x5108, "blocked.test", A, 53008),
]


def build_query(qid, name, qtype):
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)  # RD, one question
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return header + qname + struct.pack("!HH", qtype, 1)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    servers = {socket.AF_INET: sys.argv[1], socket.AF_INET6: sys.argv[2]}
    for transport, family, qid, name, qtype, sport in QUERIES:
        query = build_query(qid, name, qtype)
        kind = socket.SOCK_DGRAM if transport == "udp" else socket.SOCK_STREAM
        with socket.socket(family, kind) as s:
            s.settimeout(5)
            s.bind(("0.0.0.0" if family == socket.AF_INET else "::", sport))
            s.connect((servers[family], 53))
            if transport == "udp":
                s.send(query)
                answer = s.recv(4096)
            else:
                s.sendall(struct.pack("!H", len(query)) + query)
                (length,) = struct.unpack("!H", recv_exact(s, 2))
                answer = recv_exact(s, length)
        rid, flags, _qd, ancount = struct.unpack_from("!HHHH", answer)
        if rid != qid:
            sys.exit(f"{name}: answer id {rid:#x} != {qid:#x}")
        print(f"{transport} {name} type {qtype}: id {qid:#x} rcode {flags & 0xF} answers {ancount}")


if __name__ == "__main__":
    main()
