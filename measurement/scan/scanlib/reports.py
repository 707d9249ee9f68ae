"""What the scan's results turn into: the summary, the paper's CSV, the merge of shards, and
quicstepd's preload file. Pure functions over records; the CLI does the file I/O."""
import csv
import io
from collections import Counter, defaultdict
from typing import Dict, Iterable, List, Optional, Tuple

from .classes import (CLASSES, address_failure, address_quicstep_ok, addresses, classify)
from .ip2asn import Ip2Asn


def _sort_key(rec: dict):
    rank = rec.get("rank")
    return (rank if isinstance(rank, int) else float("inf"), rec.get("input_line") or 0,
            rec["domain"])


def summarize(records: Iterable[dict], ip2asn: Optional[Ip2Asn] = None, top: int = 20) -> dict:
    """Counts and shares per class; port migration among QUIC domains; per provider (the AS
    of each domain's primary address) when a table is given."""
    counts = Counter({c: 0 for c in CLASSES})
    port, total, quic = 0, 0, 0
    per_as: Dict[str, Counter] = defaultdict(Counter)
    for rec in records:
        dc = classify(rec)
        total += 1
        counts[dc.name] += 1
        if dc.name in ("quicstep_compatible", "quic_no_migration"):
            quic += 1
            port += dc.port_migration
        if ip2asn is not None and dc.primary_ip:
            info = ip2asn.lookup(dc.primary_ip)
            key = f"AS{info.asn} {info.description}" if info else "unknown"
            per_as[key][dc.name] += 1
            per_as[key]["domains"] += 1
            per_as[key]["port_migration"] += dc.port_migration

    def share(n, d):
        return round(n / d, 4) if d else 0.0

    out = {
        "domains": total,
        "classes": {c: {"count": counts[c], "share": share(counts[c], total)} for c in CLASSES},
        "quic": {"count": quic, "share": share(quic, total)},
        "quicstep_compatible_of_quic": share(counts["quicstep_compatible"], quic),
        "port_migration": {"count": port, "share_of_quic": share(port, quic)},
    }
    if ip2asn is not None:
        providers = sorted(per_as.items(), key=lambda kv: (-kv[1]["domains"], kv[0]))
        out["providers"] = [
            {"provider": k, "domains": v["domains"],
             **{c: v[c] for c in CLASSES}, "port_migration": v["port_migration"]}
            for k, v in providers[:top]]
        out["providers_total"] = len(providers)
    return out


def format_summary(s: dict) -> str:
    lines = [f"domains: {s['domains']}"]
    for c in CLASSES:
        v = s["classes"][c]
        lines.append(f"  {c:<20} {v['count']:>9}  {100 * v['share']:6.2f}%")
    lines.append(f"  {'QUIC (any)':<20} {s['quic']['count']:>9}  {100 * s['quic']['share']:6.2f}%")
    lines.append(f"  quicstep_compatible of QUIC: {100 * s['quicstep_compatible_of_quic']:.2f}%")
    lines.append(f"  port migration of QUIC:      {s['port_migration']['count']}"
                 f" ({100 * s['port_migration']['share_of_quic']:.2f}%)")
    if "providers" in s:
        lines.append(f"providers (AS of the primary address; top {len(s['providers'])}"
                     f" of {s['providers_total']}):")
        for p in s["providers"]:
            lines.append(f"  {p['provider'][:40]:<40} {p['domains']:>8}  compat"
                         f" {p['quicstep_compatible']:>7}  no-mig {p['quic_no_migration']:>7}"
                         f"  no-quic {p['no_quic']:>7}  port-mig {p['port_migration']:>7}")
    return "\n".join(lines)


def paper_csv(records: Iterable[dict], ip2asn: Optional[Ip2Asn] = None) -> str:
    """The paper's layout: Num, Domain, QUIC, Connection migration, IP, ASN. Num is the
    Tranco rank (the list line for a plain list); QUIC and Connection migration are
    yes/no (migration empty without QUIC); IP the primary address; ASN from the table."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["Num", "Domain", "QUIC", "Connection migration", "IP", "ASN"])
    rows = []  # (sort key, row): small tuples, not the records
    for rec in records:
        dc = classify(rec)
        has_quic = dc.name in ("quicstep_compatible", "quic_no_migration")
        info = ip2asn.lookup(dc.primary_ip) if (ip2asn and dc.primary_ip) else None
        num = rec.get("rank") if rec.get("rank") is not None else rec.get("input_line", "")
        rows.append((_sort_key(rec), [num, rec["domain"], "yes" if has_quic else "no",
                                      ("yes" if dc.port_migration else "no") if has_quic else "",
                                      dc.primary_ip or "", info.asn if info else ""]))
    rows.sort(key=lambda r: r[0])
    for _, row in rows:
        w.writerow(row)
    return buf.getvalue()


def merge(sources: List[Tuple[str, Dict[str, dict]]]):
    """Merges {domain: record} maps from shards. A domain in several: the first source's
    record is kept; if the classes differ it is a conflict. Returns (records sorted by rank
    then line, [(domain, kept source, kept class, other source, other class)], duplicates)."""
    kept: Dict[str, Tuple[str, dict]] = {}
    conflicts, duplicates = [], 0
    for source, recs in sources:
        for domain, rec in recs.items():
            if domain not in kept:
                kept[domain] = (source, rec)
                continue
            duplicates += 1
            first_source, first = kept[domain]
            a, b = classify(first), classify(rec)
            if (a.name, a.port_migration) != (b.name, b.port_migration):
                conflicts.append((domain, first_source, a.name, source, b.name))
    records = sorted((r for _, r in kept.values()), key=_sort_key)
    return records, conflicts, duplicates


def allowlist(records: Iterable[dict], port: int = 443) -> Tuple[str, dict]:
    """quicstepd's preload file of non-migrating destinations (client/core/destination_cache.hpp:
    lines `address[,port] reason`): every address that completed a QUIC handshake but is
    not quicstep_ok, with the failing test's label as the reason. An address seen under
    several domains is listed if any of them failed (a destination that fails sometimes
    should stay on the channel). Returns (file text, counts)."""
    failed: Dict[str, str] = {}
    ok = set()
    for rec in records:
        for a in addresses(rec):
            if not a.get("quic") or not a.get("ip"):
                continue
            if address_quicstep_ok(a):
                ok.add(a["ip"])
            else:
                failed.setdefault(a["ip"], address_failure(a))
    lines = ["# quicstep-scan allowlist: QUIC destinations that do not follow a client address",
             "# change (NAT rebinding / address migration failed). quicstepd keeps flows to",
             "# them on the channel. Format: address,port reason (client/core/destination_cache.hpp)."]
    for ip in sorted(failed, key=_ip_key):
        lines.append(f"{ip},{port} {failed[ip]}")
    counts = {"non_migrating": len(failed), "migrating": len(ok - set(failed)),
              "both": len(ok & set(failed))}
    return "\n".join(lines) + "\n", counts


def _ip_key(ip: str):
    import ipaddress
    a = ipaddress.ip_address(ip)
    return (a.version, int(a))
