"""Runs quicstep-probe processes over targets and appends their records to results.jsonl.

P worker processes (one per core by default), each fed lazily through its stdin: a feeder
thread per process takes the next target from the shared list iterator whenever the pipe
has room, so a million-line list never sits in memory and a faster process takes more.
The feeder never waits for results (the first quicstep-probe read its input inside its
event loop, so a driver waiting for results before feeding more locked up both sides).
Each process numbers its input lines; the driver maps them back to the list's targets and
rewrites `input_line` to the list's line. Ctrl-C (SIGINT) or SIGTERM stops feeding, ends
the workers and leaves results.jsonl with whole lines only: the next run resumes.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Iterator, List

from .classes import classify
from .records import dump_line
from .targets import Target


class Worker:
    """One quicstep-probe process: a feeder thread (stdin) and a reader thread (stdout)."""

    def __init__(self, index, cmd, targets, lock, events, stderr):
        self.index = index
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, text=True, bufsize=1,
                                     start_new_session=True)  # Ctrl-C reaches only the driver
        self.targets, self.lock = targets, lock
        self.sent = {}  # engine input line → Target
        self.sent_lock = threading.Lock()
        self.events = events
        self.stop = threading.Event()
        self.feeder = threading.Thread(target=self._feed, daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.feeder.start()
        self.reader.start()

    def _next(self):
        with self.lock:
            return next(self.targets, None)

    def _feed(self):
        line = 0
        try:
            while not self.stop.is_set():
                t = self._next()
                if t is None:
                    break
                line += 1
                with self.sent_lock:
                    self.sent[line] = t
                self.proc.stdin.write(f"{t.rank},{t.domain}\n" if t.rank else f"{t.domain}\n")
                self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def _read(self):
        for raw in self.proc.stdout:
            if not raw.endswith("\n"):
                break  # cut off by the process ending: not a record
            try:
                rec = json.loads(raw)
                n = int(rec["input_line"])
            except (ValueError, KeyError, TypeError):
                self.events.put(("engine_garbage", self.index, raw[:200]))
                continue
            with self.sent_lock:
                t = self.sent.pop(n, None)
            self.events.put(("record", t, rec))
        self.proc.wait()
        with self.sent_lock:
            lost = list(self.sent.values())
        self.events.put(("exit", self.index, self.proc.returncode, lost))

    def terminate(self):
        self.stop.set()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def run_scan(cmd: List[str], workers: int, targets: Iterator[Target], out_file, progress,
             stderr=None, clock=time.monotonic, stop_after=None):
    """Runs `workers` copies of `cmd` over `targets`, appending each record to `out_file`.
    Returns a dict: written, lost (targets outstanding when a worker ended early),
    engine_errors, interrupted, worker exit codes. `stop_after` (tests): stop after that
    many records, as Ctrl-C would."""
    events = queue.Queue()
    lock = threading.Lock()
    pool = [Worker(i, cmd, targets, lock, events, stderr) for i in range(workers)]
    result = {"written": 0, "lost": [], "engine_errors": [], "interrupted": False,
              "exit_codes": {}}
    interrupted = threading.Event()

    def on_signal(signum, frame):
        interrupted.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    running = workers
    try:
        while running:
            if interrupted.is_set() and not result["interrupted"]:
                result["interrupted"] = True
                for w in pool:
                    w.terminate()
            try:
                ev = events.get(timeout=0.1)
            except queue.Empty:
                progress.tick(clock())
                continue
            if ev[0] == "record":
                _, target, rec = ev
                if target is None or "domain" not in rec:
                    result["engine_errors"].append(rec)
                    continue
                rec["input_line"] = target.line
                if target.rank is not None:
                    rec["rank"] = target.rank
                out_file.write(dump_line(rec))
                out_file.flush()
                result["written"] += 1
                dc = classify(rec)
                progress.add(dc.name, dc.port_migration)
                progress.tick(clock())
                if stop_after is not None and result["written"] >= stop_after:
                    interrupted.set()
            elif ev[0] == "engine_garbage":
                result["engine_errors"].append({"worker": ev[1], "line": ev[2]})
            elif ev[0] == "exit":
                _, index, code, lost = ev
                running -= 1
                result["exit_codes"][index] = code
                if not result["interrupted"]:
                    result["lost"].extend(lost)
    finally:
        for w in pool:
            w.terminate()
        for s, h in old.items():
            signal.signal(s, h)
        progress.finish(clock())
    return result
