"""What each batch ran: the repository's commit, whether the tree had changes, and per mode
the quicstepd native path and config, one row per batch in OUT/batches.csv (issue 24: "the
report says which quicstepd commit and config each batch ran")."""
import csv
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIELDS = ["experiment", "profile", "channel_rate_mbit", "started_unix", "finished_unix",
          "rounds", "commit", "tree", "modes"]


def git(*args):
    r = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def source_state():
    """(commit, 'clean' | 'changed: <paths>') of the tree the binaries were built from."""
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no")
               .splitlines() if line[3:] and not line[3:].startswith("measurement/pageload/results")]
    return commit, ("changed: " + " ".join(changed[:8]) if changed else "clean")


def describe_modes(variants, native_paths):
    """'label: native path X, config extra Y' per variant (the daemon's modes only)."""
    out = []
    for label, _, extra in variants:
        if label not in native_paths:
            continue
        cfg = " ".join(line.strip() for line in extra.splitlines() if line.strip())
        out.append(f"{label}: native_path {native_paths[label]}, "
                   + (f"config default + `{cfg}`" if cfg else "config default"))
    return "; ".join(out)


def append(path, row):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in FIELDS})


def read(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(r["experiment"], r["profile"], r["channel_rate_mbit"]): r
                for r in csv.DictReader(f)}


def head_at(unix):
    """The commit at the tip of main at a time (for batches run before the record existed)."""
    return git("rev-list", "-1", "--abbrev-commit", "--abbrev=12", f"--before={int(unix)}",
               "HEAD")
