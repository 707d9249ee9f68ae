"""Background processes of the lab tests and tools: started (in a network namespace, with
their output in a log), tracked, and ended by PID only — never by a name pattern.

A process runs in a session of its own, so that stop() can end what it started too (the
group id is its PID). CPU accounting (cpu_seconds) is read from /proc/<pid>/stat."""
import os
import signal
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def start(netns, argv, log_path, *, cpus=None, nice=0, capture_stdout=False, env=None,
          new_session=True, cwd=None):
    """Starts argv inside namespace `netns` (None: this one), stderr (and stdout unless
    capture_stdout) to log_path. cpus: a taskset CPU list ("0"); nice: its niceness.
    `ip netns exec`, taskset and nice all exec, so the returned Popen's PID is the program's.
    With capture_stdout, stop() reads the output into `p.output`."""
    cmd = [str(a) for a in argv]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    if cpus is not None:
        cmd = ["taskset", "-c", str(cpus), *cmd]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if capture_stdout else log,
                             stderr=log if capture_stdout else subprocess.STDOUT,
                             text=capture_stdout or None, start_new_session=new_session,
                             env=env, cwd=cwd)
    p.output = None
    return p


def stop(p, sig=signal.SIGINT, timeout=10):
    """Sends `sig` to the process and waits `timeout` s; then SIGKILLs its process group
    (its session's, when started by start()). Returns the exit code (negative: the signal)."""
    if p.poll() is None:
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            p.kill()
        out, _ = p.communicate(timeout=10)
    if out is not None:
        p.output = out
    return p.returncode


def alive(pid):
    """True while `pid` runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def cpu_seconds(pid):
    """utime + stime of a process (all its threads); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


class CpuMeter:
    """The share of one core a process used between mark() and share() (1.0 = a core)."""

    def __init__(self, pid):
        self.pid, self.cpu0, self.t0 = pid, None, None

    def mark(self):
        self.cpu0, self.t0 = cpu_seconds(self.pid), time.monotonic()

    def share(self):
        now = cpu_seconds(self.pid)
        if now is None or self.cpu0 is None:
            return float("nan")
        return (now - self.cpu0) / max(1e-6, time.monotonic() - self.t0)


class Procs:
    """The processes one test (class) started, ended together by stop_all (last first)."""

    def __init__(self):
        self.procs = []

    def start(self, netns, argv, log_path, **kw):
        """As start(); the process is tracked until stop() or stop_all()."""
        p = start(netns, argv, log_path, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGINT, timeout=10):
        code = stop(p, sig, timeout)
        if p in self.procs:
            self.procs.remove(p)
        return code

    def stop_all(self, sig=signal.SIGINT):
        for p in list(reversed(self.procs)):
            self.stop(p, sig)


def wait_for(predicate, proc=None, seconds=10, interval=0.05):
    """Polls predicate() until it is true (True) or `seconds` pass (False); returns False at
    once if `proc` (a Popen) has exited."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(interval)
    return predicate()


def wait_text(path, text, proc=None, seconds=15):
    """Waits until the file at `path` (a log) contains `text`."""
    def found():
        try:
            with open(path) as f:
                return text in f.read()
        except OSError:
            return False
    return wait_for(found, proc, seconds)


def wait_file(path, proc=None, seconds=5):
    """Waits until `path` exists."""
    return wait_for(lambda: os.path.exists(path), proc, seconds)
