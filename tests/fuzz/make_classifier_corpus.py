#!/usr/bin/env python3
# Writes the seed corpus of fuzz_classifier (tests/fuzz/corpus/classifier/):
#   python3 tests/fuzz/make_classifier_corpus.py tests/fuzz/corpus/classifier tests/fuzz/corpus/ip_packet
# Seed corpus for fuzz_classifier: control byte + IP packet (checksums left zero: the
# classifier does not verify them).
import struct, os, sys, glob
out = sys.argv[1]
def ip4(src, dst, proto, l4, frag=0):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(l4), 1, frag, 64, proto, 0,
                    bytes(src), bytes(dst))
    return h + l4
def ip6(src, dst, nh, l4, ext=b''):
    return struct.pack('!IHBB16s16s', 6 << 28, len(ext) + len(l4), nh if not ext else ext[0:0] or 0, 64,
                       bytes(src), bytes(dst)) + ext + l4
def udp(sp, dp, payload):
    return struct.pack('!HHHH', sp, dp, 8 + len(payload), 0) + payload
def tcp(sp, dp, flags, payload=b''):
    return struct.pack('!HHIIBBHHH', sp, dp, 1, 0, 5 << 4, flags, 65535, 0, 0) + payload
C4, S4 = [198, 18, 0, 2], [198, 18, 1, 10]
C6 = [0x20, 1, 0xd, 0xb8] + [0] * 11 + [2]
S6 = [0x20, 1, 0xd, 0xb8, 0, 1] + [0] * 9 + [0x10]
def long_hdr(first, version, body=40):
    return bytes([first]) + struct.pack('!I', version) + bytes([8]) + bytes(range(0xa0, 0xa8)) + \
        bytes([8]) + bytes(range(0xb0, 0xb8)) + bytes((i * 7) & 0xff for i in range(body))
short = bytes([0x41]) + b'\x5c' * 59
seeds = {
    'out4_initial_v1': (0x08, ip4(C4, S4, 17, udp(40000, 443, long_hdr(0xc1, 1, 1200)))),
    'in4_initial_v1': (0x52, ip4(S4, C4, 17, udp(443, 40000, long_hdr(0xc1, 1, 200)))),
    'out4_short': (0x08, ip4(C4, S4, 17, udp(40000, 443, short))),
    'in4_native_short': (0x09, ip4(S4, C4, 17, udp(443, 40000, short))),
    'out4_short_timers': (0xfc, ip4(C4, S4, 17, udp(40000, 443, short))),
    'out4_initial_v2': (0x08, ip4(C4, S4, 17, udp(40001, 443, long_hdr(0xd1, 0x6b3343cf, 300)))),
    'out4_handshake': (0x08, ip4(C4, S4, 17, udp(40000, 443, long_hdr(0xe1, 1)))),
    'out4_retry': (0x00, ip4(C4, S4, 17, udp(40000, 443, long_hdr(0xf0, 1)))),
    'out4_vn': (0x00, ip4(C4, S4, 17, udp(40000, 443, long_hdr(0xaa, 0, 8)))),
    'out4_greased_long': (0x00, ip4(C4, S4, 17, udp(40000, 443, long_hdr(0x81, 1)))),
    'out4_unknown_version': (0x00, ip4(C4, S4, 17, udp(40000, 443, long_hdr(0xc5, 0x1a2a3a4a)))),
    'out4_dns': (0x00, ip4(C4, S4, 17, udp(40000, 53, b'\x12\x34\x01\x00\x00\x01' + b'\0' * 6))),
    'out4_tcp_syn': (0x00, ip4(C4, S4, 6, tcp(40000, 443, 0x02))),
    'out4_tcp_dns': (0x00, ip4(C4, S4, 6, tcp(40000, 53, 0x18, b'\x00\x0c' + b'\x12' * 12))),
    'out4_first_fragment': (0x00, ip4(C4, S4, 17, udp(40000, 443, short), frag=0x2000)),
    'out4_later_fragment': (0x00, ip4(C4, S4, 17, short, frag=185)),
    'out4_icmp': (0x00, ip4(C4, S4, 1, b'\x08\x00\x00\x00\x00\x01\x00\x01')),
    'out4_other_udp': (0x00, ip4(C4, S4, 17, udp(40000, 8080, short))),
    'out4_tiny_short': (0x00, ip4(C4, S4, 17, udp(40000, 443, short[:10]))),
    'out6_initial': (0x08, ip6(C6, S6, 17, udp(40000, 443, long_hdr(0xc1, 1, 1200)))),
    'out6_short': (0x08, ip6(C6, S6, 17, udp(40000, 443, short))),
    'in6_native_short': (0x09, ip6(S6, C6, 17, udp(443, 40000, short))),
    'in6_channel_long': (0x0a, ip6(S6, C6, 17, udp(443, 40000, long_hdr(0xe1, 1)))),
}
# IPv6 with a fragment header (next header 44), non-first fragment of UDP.
frag_hdr = struct.pack('!BBHI', 17, 0, (185 << 3), 7)
seeds['out6_later_fragment'] = (0x00, struct.pack('!IHBB16s16s', 6 << 28, len(frag_hdr) + len(short),
                                44, 64, bytes(C6), bytes(S6)) + frag_hdr + short)
frag0 = struct.pack('!BBHI', 17, 0, 1, 7)
seeds['out6_first_fragment'] = (0x00, struct.pack('!IHBB16s16s', 6 << 28, len(frag0) + 8 + len(short),
                                44, 64, bytes(C6), bytes(S6)) + frag0 + udp(40000, 443, short))
os.makedirs(out, exist_ok=True)
for name, (ctl, pkt) in seeds.items():
    open(os.path.join(out, name), 'wb').write(bytes([ctl]) + pkt)
for path in glob.glob(sys.argv[2] + '/captured_*'):
    open(os.path.join(out, os.path.basename(path)), 'wb').write(b'\x08' + open(path, 'rb').read())
