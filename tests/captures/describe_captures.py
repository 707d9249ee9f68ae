#!/usr/bin/env python3
"""Write tests/data/README.md: what each capture is and what a test should find in it.

Usage: describe_captures.py DATA_DIR [SCRIPT_PATH] > README.md
Every fact below the headings is derived from the pcaps with tshark (which decrypts
QUIC Initial packets by itself), so the README always matches the files.
"""
import datetime
import hashlib
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

LINKTYPES = {1: "DLT_EN10MB (Ethernet)", 101: "DLT_RAW", 113: "DLT_LINUX_SLL", 276: "DLT_LINUX_SLL2"}
QUIC_TYPES = {0: "Initial", 1: "0-RTT", 2: "Handshake", 3: "Retry"}
FRAME_NAMES = {0: "PADDING", 1: "PING", 2: "ACK", 3: "ACK", 6: "CRYPTO", 7: "NEW_TOKEN",
               0x18: "NEW_CONNECTION_ID", 0x1c: "CONNECTION_CLOSE", 0x1d: "CONNECTION_CLOSE",
               0x1e: "HANDSHAKE_DONE"}
GROUPS = {0x11ec: "X25519MLKEM768", 0x1d: "x25519", 0x17: "secp256r1", 0x18: "secp384r1",
          0x19: "secp521r1"}

DESCRIPTIONS = {
    "chromium_quic_blocked.pcap":
        "chromium-headless-shell loading `https://blocked.test/` forced onto QUIC (HTTP/3) "
        "from gtlsserver, over IPv4. Chromium's ClientHello carries a post-quantum key share "
        "(X25519MLKEM768), so it does not fit in one Initial: it spans several Initial "
        "datagrams, and Chromium's \"chaos protection\" cuts it into many CRYPTO frames sent "
        "out of order among PING and PADDING frames.",
    "chromium_quic_blocked_v6.pcap":
        "The same page load as chromium_quic_blocked.pcap, over IPv6.",
    "gtlsclient_quic.pcap":
        "Debian's gtlsclient (ngtcp2 0.12.1 example client) fetching `/index.html` from "
        "gtlsserver over QUIC/IPv4, with `--sni=blocked.test --dcid=... --scid=...`. "
        "gtlsclient sends SNI `localhost` (see below) because its HOST argument is a numeric "
        "address, and `--sni=blocked.test` does not change that in 0.12.1. Its ClientHello "
        "(no post-quantum key share) fits in one Initial. ngtcp2 greases the QUIC bit "
        "(RFC 9287) on some connections and not others: see the counts of packets with the "
        "fixed bit 0 below.",
    "gtlsclient_quic_v6.pcap":
        "The same gtlsclient fetch over IPv6.",
    "chromium_tls_tcp_blocked.pcap":
        "chromium-headless-shell loading `https://blocked.test/` over TLS 1.3 on TCP "
        "(`--disable-quic`) from `openssl s_server -www`, over IPv4. The ClientHello "
        "(with the X25519MLKEM768 key share) is larger than one TCP segment.",
    "dns_queries.pcap":
        "Fixed DNS queries (tests/captures/dns_queries.py) over UDP and TCP, IPv4 and IPv6, "
        "answered by dnsmasq (`--address=/blocked.test/...`, `--address=/open.test/...`).",
}
ORDER = list(DESCRIPTIONS)


def tshark(args):
    return subprocess.run(["tshark", "-n"] + args, check=True, capture_output=True,
                          text=True).stdout


def linktype(path):
    with open(path, "rb") as f:
        head = f.read(24)
    magic = head[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    (lt,) = struct.unpack(endian + "I", head[20:24])
    return lt


def fields(elem, name):
    return [f.get("show") for f in elem.iter("field") if f.get("name") == name]


def first(elem, name, default=""):
    v = fields(elem, name)
    return v[0] if v else default


def hexval(elem, name):
    for f in elem.iter("field"):
        if f.get("name") == name:
            return f.get("value", "")
    return None


def pdml_packets(path):
    root = ET.fromstring(tshark(["-r", path, "-T", "pdml"]))
    out = []
    for pkt in root.iter("packet"):
        protos = {p.get("name"): p for p in pkt.findall("proto")}
        ip = protos.get("ip") or protos.get("ipv6")
        v6 = "ipv6" in protos
        rec = {
            "no": int(first(protos["frame"], "frame.number")),
            "time": float(first(protos["frame"], "frame.time_relative")),
            "src": first(ip, "ipv6.src" if v6 else "ip.src"),
            "dst": first(ip, "ipv6.dst" if v6 else "ip.dst"),
            "udp_len": int(first(protos["udp"], "udp.length")) - 8 if "udp" in protos else None,
            "sport": int(first(protos["udp"], "udp.srcport")) if "udp" in protos else None,
            "dport": int(first(protos["udp"], "udp.dstport")) if "udp" in protos else None,
            "quic": [], "ch": None,
        }
        for q in pkt.findall("proto"):
            if q.get("name") != "quic":
                continue
            form = first(q, "quic.header_form")
            qp = {
                "long": form == "1",
                "fixed": first(q, "quic.fixed_bit"),
                "type": QUIC_TYPES.get(int(first(q, "quic.long.packet_type", "-1")), "?")
                        if form == "1" else "1-RTT",
                "version": first(q, "quic.version"),
                "dcid": hexval(q, "quic.dcid"),
                "scid": hexval(q, "quic.scid"),
                "pn": first(q, "quic.packet_number", None),
                "frames": [int(x) for x in fields(q, "quic.frame_type")],
                "crypto": list(zip([int(x) for x in fields(q, "quic.crypto.offset")],
                                   [int(x) for x in fields(q, "quic.crypto.length")])),
                "len": int(first(q, "quic.packet_length", "0")),
            }
            if qp["long"] and qp["scid"] is None:
                qp["scid"] = ""      # zero-length SCID: tshark shows no field
            if qp["long"] and qp["dcid"] is None:
                qp["dcid"] = ""
            rec["quic"].append(qp)
            for tls in q.iter("proto"):
                if tls.get("name") == "tls" and "1" in fields(tls, "tls.handshake.type") \
                        and rec["ch"] is None:
                    rec["ch"] = tls_facts(tls)
        out.append(rec)
    return out


def field_pos(elem, name):
    for f in elem.iter("field"):
        if f.get("name") == name:
            return int(f.get("pos")), int(f.get("size"))
    return None


def tls_facts(tls):
    ch_pos = next(int(f.get("pos")) for f in tls.iter("field")
                  if f.get("name") == "tls.handshake.type" and f.get("show") == "1")
    sni = field_pos(tls, "tls.handshake.extensions_server_name")
    return {
        "sni_range": (sni[0] - ch_pos, sni[0] - ch_pos + sni[1]) if sni else None,
        "hs_len": int(first(tls, "tls.handshake.length")),
        "sni": fields(tls, "tls.handshake.extensions_server_name"),
        "alpn": fields(tls, "tls.handshake.extensions_alpn_str"),
        "ciphers": [c for c in (f.get("value") for f in tls.iter("field")
                                if f.get("name") == "tls.handshake.ciphersuite")],
        "groups": [int(g, 0) for g in fields(tls, "tls.handshake.extensions_supported_group")],
        "key_shares": [int(g, 0) for g in fields(tls, "tls.handshake.extensions_key_share_group")],
    }


def group_names(gs):
    return ", ".join(GROUPS.get(g, f"0x{g:04x}" + (" (GREASE)" if (g & 0x0f0f) == 0x0a0a else ""))
                     for g in gs)


def cid(h):
    return f"`{h}` ({len(h) // 2} bytes)" if h else "empty (0 bytes)"


def covered(ranges, total):
    """True if the union of (offset, length) ranges covers [0, total)."""
    end = 0
    for off, ln in sorted(ranges):
        if off > end:
            return False
        end = max(end, off + ln)
    return end >= total


def describe_quic(path, chromium):
    pkts = pdml_packets(path)
    client, server = pkts[0]["src"], pkts[0]["dst"]
    lines = []
    first_reply = next(p["no"] for p in pkts if p["src"] == server)
    ch_frame = next((p for p in pkts if p["ch"]), None)
    if ch_frame is None:
        return ["- **No ClientHello found by tshark.**"]
    ch = ch_frame["ch"]
    ch_bytes = ch["hs_len"] + 4
    ci = [p for p in pkts if p["src"] == client and p["quic"] and p["quic"][0]["type"] == "Initial"
          and any(q["crypto"] for q in p["quic"] if q["type"] == "Initial")]
    carrying_before_reply = [p for p in ci if p["no"] < first_reply]
    ranges, needed = [], None
    for i, p in enumerate(ci):
        for q in p["quic"]:
            if q["type"] == "Initial":
                ranges += q["crypto"]
        if covered(ranges, ch_bytes):
            needed = ci[:i + 1]
            break
    q0 = pkts[0]["quic"][0]
    srv = next(p for p in pkts if p["src"] == server)
    srv_q = srv["quic"][0]
    lines.append(f"- Client `{client}` port {pkts[0]['sport']} → server `{server}` port "
                 f"{pkts[0]['dport']}; QUIC version {q0['version']}.")
    lines.append(f"- First datagram (frame 1): Initial, UDP payload {pkts[0]['udp_len']} bytes, "
                 f"**DCID `{q0['dcid']}`** ({len(q0['dcid']) // 2} bytes), SCID "
                 f"{cid(q0['scid'])}, packet number {q0['pn']}.")
    lines.append(f"- ClientHello: {ch_bytes} bytes of CRYPTO data (handshake length "
                 f"{ch['hs_len']}), **in {len(needed)} Initial datagram(s)**: frames "
                 + ", ".join(str(p["no"]) for p in needed)
                 + f" (packet numbers " + ", ".join(p["quic"][0]["pn"] for p in needed)
                 + f"); tshark completes its reassembly in frame {ch_frame['no']}.")
    if len(carrying_before_reply) > len(needed):
        extra = [p for p in carrying_before_reply if p not in needed]
        lines.append(f"- Before the server's first reply the client sent {len(carrying_before_reply)} "
                     f"Initial datagrams with CRYPTO frames: frames "
                     + ", ".join(str(p["no"]) for p in extra)
                     + " (packet numbers " + ", ".join(p["quic"][0]["pn"] for p in extra)
                     + ") carry ClientHello bytes again: "
                     + ("a complete second copy, cut differently." if covered(
                         [r for p in extra for q in p["quic"] if q["type"] == "Initial"
                          for r in q["crypto"]], ch_bytes) else "parts of it again."))
    for p in needed:
        q = p["quic"][0]
        lines.append(f"  - frame {p['no']}: CRYPTO (offset, length) in packet order: "
                     + ", ".join(f"({o}, {l})" for o, l in q["crypto"])
                     + f"; {q['frames'].count(1)} PING, {q['frames'].count(0)} PADDING frames")
    lines.append(f"- **SNI `{', '.join(ch['sni'])}`**; **ALPN {', '.join(repr(a) for a in ch['alpn'])}**.")
    if ch["sni_range"]:
        a, b = ch["sni_range"]
        holders = [p["no"] for p in needed for q in p["quic"] if q["type"] == "Initial"
                   if any(o < b and o + l > a for o, l in q["crypto"])]
        first_ranges = [r for q in needed[0]["quic"] if q["type"] == "Initial" for r in q["crypto"]]
        prefix = 0
        for o, l in sorted(first_ranges):
            if o > prefix:
                break
            prefix = max(prefix, o + l)
        lines.append(f"- The SNI name's bytes are at CRYPTO offsets [{a}, {b}) of the ClientHello"
                     + (" (Chromium randomises the extension order)" if chromium else "")
                     + ", carried in frame(s) "
                     + ", ".join(str(n) for n in sorted(set(holders)))
                     + f". The first datagram alone gives a contiguous ClientHello prefix of "
                     f"{prefix} of {ch_bytes} bytes.")
    lines.append(f"- Supported groups: {group_names(ch['groups'])}; key shares: "
                 f"{group_names(ch['key_shares'])}.")
    lines.append(f"- Cipher suites: {', '.join('0x' + c for c in ch['ciphers'])}.")
    lines.append(f"- Server's first datagram: frame {srv['no']}, "
                 + " + ".join(q["type"] for q in srv["quic"])
                 + f"; server SCID {cid(srv_q['scid'])}, DCID {cid(srv_q['dcid'])}.")
    for who, addr in (("client", client), ("server", server)):
        sh = next((p["no"] for p in pkts if p["src"] == addr
                   and any(not q["long"] for q in p["quic"])), None)
        zero = sum(1 for p in pkts if p["src"] == addr for q in p["quic"] if q["fixed"] == "0")
        lines.append(f"- First datagram from the {who} with a short-header (1-RTT) packet: "
                     f"frame {sh}. Packets from the {who} with the fixed bit 0 (greased): {zero}.")
    lines.append("")
    lines.append("Datagrams (packet numbers only where tshark can decrypt, i.e. Initials; a DCID only "
                 "where tshark knows its length):")
    lines.append("")
    lines.append("| frame | from | UDP payload | QUIC packets (type, packet number, DCID) |")
    lines.append("|---|---|---|---|")
    for p in pkts:
        qs = "; ".join(f"{q['type']}" + (f" pn={q['pn']}" if q["pn"] is not None else "")
                       + (f" dcid={q['dcid'] or '(empty)'}" if q["dcid"] is not None else "")
                       + (" fixed=0" if q["fixed"] == "0" else "")
                       for q in p["quic"])
        lines.append(f"| {p['no']} | {'client' if p['src'] == client else 'server'} | "
                     f"{p['udp_len']} | {qs} |")
    return lines


def describe_tcp_tls(path):
    out = tshark(["-r", path, "-Y", "tls.handshake.type == 1", "-T", "fields",
                  "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,",
                  "-e", "frame.number", "-e", "ip.src", "-e", "tcp.srcport", "-e", "ip.dst",
                  "-e", "tcp.dstport", "-e", "tcp.segment", "-e", "tls.record.length",
                  "-e", "tls.handshake.length", "-e", "tls.handshake.extensions_server_name",
                  "-e", "tls.handshake.extensions_alpn_str",
                  "-e", "tls.handshake.extensions_supported_group",
                  "-e", "tls.handshake.extensions_key_share_group",
                  "-e", "tls.handshake.ciphersuite"]).splitlines()
    lines = []
    conns = tshark(["-r", path, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields",
                    "-e", "frame.number"]).split()
    lines.append(f"- TCP connections (SYNs in frames {', '.join(conns)}); "
                 f"{len(out)} ClientHello(s).")
    for row in out:
        (no, src, sport, dst, dport, segs, reclen, hslen, sni, alpn, groups, shares,
         ciphers) = row.split("\t")
        segs = segs.split(",") if segs else [no]
        seg_lens = tshark(["-r", path, "-Y", " || ".join(f"frame.number == {n}" for n in segs),
                           "-T", "fields", "-e", "tcp.len"]).split()
        lines.append(f"- ClientHello from `{src}` port {sport} to `{dst}` port {dport}: TLS record "
                     f"length {reclen} (handshake length {hslen}), **in {len(segs)} TCP segment(s)**: "
                     f"frames {', '.join(segs)} (TCP payload {', '.join(seg_lens)} bytes); "
                     f"tshark reassembles it in frame {no}.")
        lines.append(f"- **SNI `{sni}`**; **ALPN {', '.join(repr(a) for a in alpn.split(','))}**.")
        lines.append(f"- Supported groups: {group_names([int(g, 0) for g in groups.split(',')])}; "
                     f"key shares: {group_names([int(g, 0) for g in shares.split(',')])}.")
        lines.append("- Cipher suites: " + ", ".join(
            c + (" (GREASE)" if (int(c, 16) & 0x0f0f) == 0x0a0a else "") for c in ciphers.split(",")) + ".")
    return lines


def describe_dns(path):
    rows = tshark(["-r", path, "-Y", "dns", "-T", "fields", "-E", "separator=\t",
                   "-E", "occurrence=a", "-E", "aggregator=,",
                   "-e", "frame.number", "-e", "ip.src", "-e", "ipv6.src", "-e", "udp.srcport",
                   "-e", "tcp.srcport", "-e", "dns.id", "-e", "dns.flags.response",
                   "-e", "dns.qry.name", "-e", "dns.qry.type", "-e", "dns.a",
                   "-e", "dns.aaaa"]).splitlines()
    qtypes = {"1": "A", "28": "AAAA"}
    lines = ["", "| frame | transport | from | src port | id | query/response | name | type | answer |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        no, ip4, ip6, usport, tsport, qid, resp, name, qtype, a, aaaa = row.split("\t")
        lines.append(f"| {no} | {'UDP' if usport else 'TCP'} | {ip4 or ip6} | {usport or tsport} | "
                     f"{qid} | {'response' if resp in ('1', 'True') else 'query'} | {name} | "
                     f"{qtypes.get(qtype, qtype)} | {a or aaaa} |")
    return lines


def main():
    data = sys.argv[1]
    script = "tests/captures/make_captures.sh"
    versions = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Version}\n", "chromium-headless-shell",
         "ngtcp2-server", "ngtcp2-client", "openssl", "dnsmasq-base", "tcpdump", "tshark"],
        capture_output=True, text=True).stdout.strip().splitlines()
    p = print
    p("# Real packet captures (test data)")
    p()
    made = min(float(tshark(["-r", os.path.join(data, n), "-c", "1", "-T", "fields",
                             "-e", "frame.time_epoch"]).strip())
               for n in ORDER if os.path.exists(os.path.join(data, n)))
    made = datetime.datetime.fromtimestamp(made, datetime.timezone.utc)
    p(f"Made by `{script}` (run as root; it needs the packages below) on "
      f"{made:%Y-%m-%d %H:%M} UTC; this README is written "
      "by `tests/captures/describe_captures.py` from the pcaps with tshark, so the facts below "
      "match the files. Re-running the script makes new captures (new random connection IDs, "
      "ports and keys) and a new README.")
    p()
    p("How they were made: two network namespaces (`qs-cap-client`, `qs-cap-server`) joined by "
      "one veth pair; client `198.18.200.1` / `2001:db8:200::1` (MAC `02:00:c6:12:c8:01`), "
      "server `198.18.200.2` / `2001:db8:200::2` (MAC `02:00:c6:12:c8:02`); no other routes. "
      "Checksum, segmentation and GRO offloads are off on the veth, so every frame is one wire "
      "packet with valid IP/UDP/TCP checksums. tcpdump captured on the client's veth with "
      "`-s 0 -U` and the filter `udp or tcp` (no ARP, no ICMPv6 neighbour discovery). "
      "Servers: `gtlsserver` (QUIC, UDP 443, self-signed ECDSA P-256 certificate for localhost, "
      "blocked.test and www.blocked.test), `openssl s_server -www` (TCP 443), dnsmasq (port 53). "
      "Chromium ran with `--origin-to-force-quic-on=blocked.test:443` (or `--disable-quic`), "
      "`--host-resolver-rules=\"MAP blocked.test <server address>\"` and "
      "`--ignore-certificate-errors-spki-list=<the certificate's SPKI hash>`.")
    p()
    p("Package versions:")
    p()
    for v in versions:
        p(f"- {v}")
    p()
    present = [n for n in ORDER if os.path.exists(os.path.join(data, n))]
    lts = sorted({linktype(os.path.join(data, n)) for n in present})
    p("Link type of every file: " + ", ".join(f"{lt} = {LINKTYPES.get(lt, '?')}" for lt in lts)
      + (" (frames start with a 14-byte Ethernet header)" if lts == [1] else "")
      + ". Files are classic pcap (not pcapng), microsecond timestamps.")
    p()
    p("Decrypting the QUIC Initials needs nothing but the pcap: `tshark -r FILE -Y quic -V`.")
    for name in ORDER:
        path = os.path.join(data, name)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        count = len(tshark(["-r", path, "-T", "fields", "-e", "frame.number"]).split())
        lt = linktype(path)
        p()
        p(f"## {name}")
        p()
        p(DESCRIPTIONS[name])
        p()
        p(f"- {count} frames, {os.path.getsize(path)} bytes, link type {lt} "
          f"= {LINKTYPES.get(lt, '?')}; sha256 `{digest}`.")
        if "quic" in name:
            lines = describe_quic(path, name.startswith("chromium"))
        elif "tcp" in name:
            lines = describe_tcp_tls(path)
        else:
            lines = describe_dns(path)
        for line in lines:
            p(line)
    p()
    p("## What the tests should check")
    p()
    p("- QUIC: parse every client Initial, derive the Initial keys from the DCID of the first "
      "Initial (RFC 9001 §5.2), remove header protection, decrypt, reassemble CRYPTO frames "
      "across datagrams (out of order, gaps filled by later datagrams; Chromium has also been "
      "seen sending the whole ClientHello twice in one flight, so duplicate ranges must be "
      "accepted) and "
      "recover the SNI and the ALPN list listed above; with only the first Initial of a "
      "Chromium capture the ClientHello is incomplete and the parser must say so, not fail.")
    p("- Packets with the fixed bit 0, where the counts above show some (ngtcp2 greases the QUIC "
      "bit, RFC 9287), are still QUIC packets: a long header is told by the first bit alone.")
    p("- TCP: reassemble the ClientHello from the TCP segments listed and recover SNI and ALPN.")
    p("- DNS: the query names and types listed, over UDP and TCP (2-byte length prefix).")


if __name__ == "__main__":
    main()
