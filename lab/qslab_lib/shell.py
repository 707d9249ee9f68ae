"""Running commands, in the root namespace or in a lab host's namespace."""
import subprocess


class LabError(Exception):
    """A lab step failed; the message says which command and why."""


def run(*args, check=True, input=None, timeout=60):
    """Runs a command; returns its stdout. Raises LabError with the command and its
    stderr when it fails (and check is set)."""
    try:
        res = subprocess.run([str(a) for a in args], input=input, capture_output=True,
                             text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise LabError(f"command not found: {args[0]} ({e})") from e
    except subprocess.TimeoutExpired as e:
        raise LabError(f"timed out after {timeout}s: {' '.join(map(str, args))}") from e
    if check and res.returncode != 0:
        raise LabError(f"`{' '.join(map(str, args))}` failed ({res.returncode}): "
                       f"{res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def ns(netns, *args, **kw):
    """Runs a command inside a namespace (ip netns exec: also bind-mounts
    /etc/netns/<netns>/resolv.conf)."""
    return run("ip", "netns", "exec", netns, *args, **kw)
