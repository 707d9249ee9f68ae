"""The scan's results file, DIR/results.jsonl: one engine record per domain, one a line.

The driver replaces the engine's `input_line` (a line of the engine's own input) by the
line of the original list and adds nothing else, so a record is what quicstep-probe wrote.
Appends are whole lines, flushed; a crash can still leave a last line without its newline,
which reading reports and ignores (and `open_for_append` cuts off).
"""
import json
import os
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Tuple


@dataclass
class ReadReport:
    records: int = 0
    truncated_tail: bool = False   # a last line without newline (crash mid-write)
    bad_lines: List[Tuple[int, str]] = field(default_factory=list)  # (line, reason)


def iter_records(path: str, report: ReadReport = None) -> Iterator[dict]:
    """Yields the domain records of `path` in file order. A line that is not a JSON object
    with a `domain` is reported (line number and reason) and skipped; so is a last line
    without its newline."""
    report = report if report is not None else ReadReport()
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        data_lines = f.read().split(b"\n")
    tail = data_lines.pop()  # after the last newline: b"" unless truncated
    if tail:
        report.truncated_tail = True
    for number, raw in enumerate(data_lines, start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except ValueError as e:
            report.bad_lines.append((number, f"not JSON: {e}"))
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("domain"), str):
            report.bad_lines.append((number, "not a domain record"))
            continue
        report.records += 1
        yield rec


def load_latest(path: str, report: ReadReport = None) -> Dict[str, dict]:
    """domain → its last record in `path` (a later line for the same domain wins)."""
    out = {}
    for rec in iter_records(path, report):
        out[rec["domain"]] = rec
    return out


def iter_latest(path: str, report: ReadReport = None) -> Iterator[dict]:
    """The latest record of each domain, streamed in two passes over the file (memory: one
    line number per domain, not the records: a million-domain file stays small)."""
    last = {}
    for number, rec in enumerate(iter_records(path, report)):
        last[rec["domain"]] = number
    for number, rec in enumerate(iter_records(path)):
        if last.get(rec["domain"]) == number:
            yield rec


def open_for_append(path: str):
    """Opens `path` for appending whole lines, first cutting a last line that lost its
    newline. Returns (file, bytes cut)."""
    cut = 0
    if os.path.exists(path):
        with open(path, "r+b") as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                cut = len(data) - end
                f.truncate(end)
    return open(path, "a", encoding="utf-8"), cut


def dump_line(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":"), sort_keys=False) + "\n"
