"""Progress display: a one-line bar on a terminal, plain lines every few seconds otherwise.
The clock is passed in (tests drive it)."""
from collections import Counter

from .classes import CLASSES, SHORT


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "--:--"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    def __init__(self, total: int, stream, tty: bool, start: float, interval: float = 5.0,
                 width: int = 24):
        self.total, self.stream, self.tty = total, stream, tty
        self.start, self.interval, self.width = start, interval, width
        self.done = 0
        self.classes = Counter()
        self.port_migration = 0
        self._last = None

    def add(self, cls: str, port_migration: bool):
        self.done += 1
        self.classes[cls] += 1
        self.port_migration += port_migration

    def line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        left = self.total - self.done
        eta = left / rate if rate > 0 else float("inf")
        frac = self.done / self.total if self.total else 1.0
        counts = " ".join(f"{SHORT[c]} {self.classes[c]}" for c in CLASSES)
        text = (f"{self.done}/{self.total} {100 * frac:5.1f}% {rate:7.1f}/s"
                f" ETA {_duration(eta)} | {counts} | port-mig {self.port_migration}")
        if self.tty:
            filled = int(frac * self.width)
            text = "[" + "#" * filled + "." * (self.width - filled) + "] " + text
        return text

    def tick(self, now: float, force: bool = False):
        """Redraws the bar (terminal, at most 10 times a second) or prints a line (every
        `interval` seconds)."""
        period = 0.1 if self.tty else self.interval
        if not force and self._last is not None and now - self._last < period:
            return
        self._last = now
        if self.tty:
            self.stream.write("\r\033[K" + self.line(now))
        else:
            self.stream.write("progress: " + self.line(now) + "\n")
        self.stream.flush()

    def finish(self, now: float):
        self.tick(now, force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
