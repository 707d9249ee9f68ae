"""The lab's state dir (/run/qslab by default, QSLAB_STATE_DIR to change): pid files of
the daemons it started, their logs, WireGuard keys and lab.json (what `status` prints)."""
import json
import os
import shutil
import signal
import subprocess
import time

from .shell import LabError

STATE_DIR = os.environ.get("QSLAB_STATE_DIR", "/run/qslab")


def path(*parts):
    return os.path.join(STATE_DIR, *parts)


def reset():
    shutil.rmtree(STATE_DIR, ignore_errors=True)
    os.makedirs(path("pids"), mode=0o700)
    os.makedirs(path("logs"), mode=0o700)


def start_daemon(name, netns, argv, env=None):
    """Starts a long-running process inside a namespace, detached from this one, with
    its output in logs/<name>.log, and records its PID (and argv[0], so that a stale pid
    file never makes us kill an unrelated process)."""
    log = open(path("logs", f"{name}.log"), "w")
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.Popen(["ip", "netns", "exec", netns] + [str(a) for a in argv],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env=full_env)
    log.close()
    # `ip netns exec` execs the command: the PID is the daemon's own.
    with open(path("pids", f"{name}.pid"), "w") as f:
        f.write(f"{proc.pid} {os.path.basename(str(argv[0]))}\n")
    return proc


def check_alive(proc, name, grace=0.0):
    """Raises LabError with the daemon's log when it has exited."""
    if grace:
        time.sleep(grace)
    if proc.poll() is not None:
        raise LabError(f"{name} exited ({proc.returncode}): {read_log(name)[-2000:]}")


def read_log(name):
    try:
        with open(path("logs", f"{name}.log")) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def kill_recorded():
    """Kills the daemons listed in pids/, each only if its PID still runs the program
    recorded with it."""
    pid_dir = path("pids")
    if not os.path.isdir(pid_dir):
        return
    for entry in os.listdir(pid_dir):
        try:
            with open(os.path.join(pid_dir, entry)) as f:
                pid_s, prog = f.read().split()
            pid = int(pid_s)
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if not any(os.path.basename(a.decode(errors="replace")) == prog for a in argv[:4]):
            continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            for _ in range(40):
                if not alive(pid):
                    break
                time.sleep(0.05)
            else:
                continue
            break


def write_status(doc):
    tmp = path("lab.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path("lab.json"))


def read_status():
    try:
        with open(path("lab.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def alive(pid):
    """True while the process exists and is not a zombie (a killed daemon stays a zombie
    until its parent, not us, reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
