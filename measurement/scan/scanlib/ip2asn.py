"""ip2asn tables (iptoasn.com format): TSV lines `range_start range_end AS_number country
AS_description`, IPv4 and IPv6 ranges in one file or several. AS 0 means not routed."""
import bisect
import ipaddress
from dataclasses import dataclass
from typing import List, Optional, Tuple


@dataclass(frozen=True)
class AsInfo:
    asn: int
    country: str
    description: str


class Ip2Asn:
    def __init__(self):
        self._ranges = {4: [], 6: []}  # family → sorted [(start, end, AsInfo)]
        self._starts = {4: [], 6: []}
        self.errors: List[Tuple[int, str]] = []

    @classmethod
    def from_file(cls, path: str) -> "Ip2Asn":
        with open(path, encoding="utf-8", errors="replace") as f:
            return cls.from_lines(f)

    @classmethod
    def from_lines(cls, lines) -> "Ip2Asn":
        table = cls()
        for number, raw in enumerate(lines, start=1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) < 5:
                table.errors.append((number, f"expected 5 tab-separated fields: `{line[:80]}'"))
                continue
            try:
                start, end = ipaddress.ip_address(fields[0]), ipaddress.ip_address(fields[1])
                asn = int(fields[2])
            except ValueError as e:
                table.errors.append((number, str(e)))
                continue
            if start.version != end.version or int(end) < int(start):
                table.errors.append((number, f"bad range `{fields[0]}'..`{fields[1]}'"))
                continue
            table._ranges[start.version].append(
                (int(start), int(end), AsInfo(asn, fields[3], fields[4])))
        for fam in (4, 6):
            table._ranges[fam].sort(key=lambda r: r[0])
            table._starts[fam] = [r[0] for r in table._ranges[fam]]
        return table

    def lookup(self, ip: str) -> Optional[AsInfo]:
        """The routed AS holding `ip`, or None (unknown, unparsable, or AS 0)."""
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        value, fam = int(addr), addr.version
        i = bisect.bisect_right(self._starts[fam], value) - 1
        if i < 0:
            return None
        start, end, info = self._ranges[fam][i]
        if value > end or info.asn == 0:
            return None
        return info
