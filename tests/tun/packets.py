"""IPv4 and IPv6 UDP packets with valid lengths and checksums, for the helper's fd 3
(WireGuard reads the IP header's length and source address; the rest is carried as is)."""
import ipaddress
import struct


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp(src, dst, sport, dport, payload):
    """An IP/UDP packet from src to dst (IPv4 or IPv6 text addresses)."""
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    length = 8 + len(payload)
    if s.version == 4:
        pseudo = s.packed + d.packed + struct.pack("!BBH", 0, 17, length)
    else:
        pseudo = s.packed + d.packed + struct.pack("!I3xB", length, 17)
    header = struct.pack("!HHHH", sport, dport, length, 0)
    csum = checksum(pseudo + header + payload) or 0xFFFF
    segment = struct.pack("!HHHH", sport, dport, length, csum) + payload
    if s.version == 4:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, 0x1234, 0, 64, 17, 0,
                         s.packed, d.packed)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        return ip + segment
    return struct.pack("!IHBB16s16s", 6 << 28, length, 17, 64, s.packed, d.packed) + segment
