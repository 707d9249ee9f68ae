#!/usr/bin/env python3
"""A stand-in for quicstep-probe in the driver's unit tests: reads `rank,domain` lines from
stdin, answers each with the fixture record for that domain (scan_records.jsonl; unknown
names: an nxdomain record), out of order (pairs swapped), flushed per line.
FAKE_PROBE_EXIT_AFTER=N: exit 3 after N records (a crash). FAKE_PROBE_ARGS=FILE: append
argv there. FAKE_PROBE_DELAY_MS: sleep that long before each record."""
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
fixture = {}
with open(os.path.join(here, "scan_records.jsonl")) as f:
    for line in f:
        r = json.loads(line)
        fixture[r["domain"]] = r
if os.environ.get("FAKE_PROBE_ARGS"):
    with open(os.environ["FAKE_PROBE_ARGS"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
exit_after = int(os.environ.get("FAKE_PROBE_EXIT_AFTER", "0"))
delay = float(os.environ.get("FAKE_PROBE_DELAY_MS", "0")) / 1000
written, pending = 0, []


def emit(rec):
    global written
    time.sleep(delay)
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()
    written += 1
    if exit_after and written >= exit_after:
        sys.exit(3)


for n, line in enumerate(sys.stdin, start=1):
    rank, _, domain = line.strip().rpartition(",")
    rec = dict(fixture.get(domain) or {"domain": domain, "elapsed_ms": 1.0, "names": [
        {"name": domain, "dns": {"status": "nxdomain", "a": [], "aaaa": []}, "addresses": []}]})
    rec["domain"], rec["input_line"] = domain, n
    rec["rank"] = int(rank) if rank else None
    pending.append(rec)
    if len(pending) == 2:
        emit(pending.pop())
        emit(pending.pop())
for rec in pending:
    emit(rec)
