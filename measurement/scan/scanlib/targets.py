"""Reading a domain list (Tranco `rank,domain` CSV or one name a line) and sharding it.

A target keeps the line it came from: shards are chosen by line number, so every machine
given the same list and `--shard i/n` takes the same lines whatever else the list holds.
"""
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Tuple

_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


@dataclass(frozen=True)
class Target:
    line: int            # 1-based line number in the list
    rank: Optional[int]  # Tranco rank, None for a plain list
    domain: str          # lower case, no trailing dot


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str  # quotes the bad value


def check_domain(text: str) -> Optional[str]:
    """Returns why `text` is not a usable domain name, or None. Expects lower case."""
    if not text:
        return "empty domain"
    if len(text) > 253:
        return f"domain longer than 253 characters: `{text[:40]}...'"
    for label in text.split("."):
        if not _LABEL.match(label):
            return f"bad domain `{text}' (label `{label}')"
    return None


def parse_line(number: int, raw: str):
    """One list line → Target, BadLine, or None (blank or `#` comment)."""
    text = raw.strip()
    if not text or text.startswith("#"):
        return None
    rank = None
    if "," in text:
        fields = text.split(",")
        if len(fields) != 2:
            return BadLine(number, f"expected `rank,domain' or `domain', got `{text}'")
        rank_text, text = fields[0].strip(), fields[1].strip()
        if not rank_text.isdigit() or int(rank_text) < 1:
            return BadLine(number, f"rank is not a positive integer: `{rank_text}'")
        rank = int(rank_text)
    domain = text.lower().rstrip(".")
    why = check_domain(domain)
    if why:
        return BadLine(number, why)
    return Target(number, rank, domain)


def parse_shard(text: str) -> Tuple[int, int]:
    """`i/n` with 0 <= i < n → (i, n); raises ValueError quoting the value."""
    m = re.fullmatch(r"(\d+)/(\d+)", text)
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise ValueError(f"shard must be i/n with 0 <= i < n, got `{text}'")
    return int(m.group(1)), int(m.group(2))


def in_shard(line: int, shard: Tuple[int, int]) -> bool:
    i, n = shard
    return (line - 1) % n == i


class ListReport:
    """What reading the list found: bad lines (kept up to a bound) and duplicates."""

    MAX_KEPT = 100

    def __init__(self):
        self.bad: List[BadLine] = []
        self.bad_count = 0
        self.duplicates = 0
        self.lines = 0

    def add_bad(self, bad: BadLine):
        self.bad_count += 1
        if len(self.bad) < self.MAX_KEPT:
            self.bad.append(bad)


def read_targets(lines: Iterable[str], shard=(0, 1), report: Optional[ListReport] = None
                 ) -> Iterator[Target]:
    """Yields the shard's targets in list order; bad lines and repeated domains go to
    `report` (a domain seen twice is probed once, at its first line). Lazy: a list of a
    million lines is never held in memory beyond the set of names seen."""
    report = report if report is not None else ListReport()
    seen = set()
    for number, raw in enumerate(lines, start=1):
        report.lines = number
        parsed = parse_line(number, raw)
        if parsed is None:
            continue
        if isinstance(parsed, BadLine):
            report.add_bad(parsed)
            continue
        if parsed.domain in seen:
            report.duplicates += 1
            continue
        seen.add(parsed.domain)
        if in_shard(number, shard):
            yield parsed
