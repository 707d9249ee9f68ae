"""What each batch ran: the repository's commit, whether the tree had changes, and per mode
the quicstepd native path and config, one row per batch in OUT/batches.csv (issue 24: "the
report says which quicstepd commit and config each batch ran")."""
import csv
import datetime
import os
import subprocess
from collections import defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIELDS = ["experiment", "profile", "channel_rate_mbit", "started_unix", "finished_unix",
          "rounds", "commit", "tree", "modes"]


def git(*args):
    r = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else ""


# What the measured binaries are not built from: a change there leaves them as committed.
NOT_PRODUCT = ("tests/", "measurement/", "docs/", "scripts/")


def source_state():
    """(commit, 'clean' | 'changed: <paths>'): the HEAD commit, and the product sources
    (everything but tests, measurement, docs, scripts and Markdown) changed in the tree."""
    commit = git("rev-parse", "--short=12", "HEAD").strip() or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no")
               .splitlines() if len(line) > 3]
    changed = [p for p in changed if not p.startswith(NOT_PRODUCT) and not p.endswith(".md")]
    return commit, ("changed: " + " ".join(changed[:8]) if changed else "clean")


# What a path mode of qs_support/path_modes.py writes into quicstepd's config by itself.
IMPLIED_CONFIG = {"QUICstep permissive": 'addressing = "permissive"\n'}


def describe_modes(variants, native_paths):
    """'label: native path X, config extra Y' per variant (the daemon's modes only)."""
    out = []
    for label, base, extra in variants:
        if label not in native_paths:
            continue
        if base in IMPLIED_CONFIG:
            extra = IMPLIED_CONFIG[base] + extra
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
               "HEAD").strip()


def section(rows, batches_csv, rate_label):
    """Per batch: when it ran, the commit and tree, and each daemon mode's native path and
    config (batches.csv, written by run_experiments.py). A batch run before that record
    existed gets the tip of main at its start, marked as inferred."""
    record = read(batches_csv)
    started = defaultdict(list)
    for r in rows:
        started[(r["experiment"], r["profile"], r["channel_rate_mbit"])].append(
            float(r["started_unix"]))
    md = ["## What each batch ran", "",
          "From `batches.csv`: the commit the binaries were built from (the release build of "
          "that tree), whether the product's sources had uncommitted changes (tests, "
          "measurement and docs aside), and quicstepd's native path "
          "as its status reported it, with the config the mode added to the default.", "",
          "| batch | profile | rate | started (UTC) | commit | tree | quicstepd modes |",
          "|---|---|---|---|---|---|---|"]
    for key in sorted(started, key=lambda k: min(started[k])):
        day = datetime.datetime.fromtimestamp(min(started[key]), datetime.timezone.utc)
        when = day.strftime("%Y-%m-%d %H:%M")
        rec = record.get(key)
        if rec:
            md.append(f"| {key[0]} | {key[1]} | {rate_label.get(key[2], key[2])} | {when} | "
                      f"{rec['commit']} | {rec['tree']} | {rec['modes'] or '–'} |")
        else:
            md.append(f"| {key[0]} | {key[1]} | {rate_label.get(key[2], key[2])} | {when} | "
                      f"{head_at(min(started[key])) or '?'} (not recorded: the tip "
                      f"of main then) | not recorded | not recorded (native path by date: "
                      f"{'queue' if min(started[key]) < ROUTED_DEFAULT_SINCE else 'routed'}) |")
    return md + [""]


# quicstepd's default native path became the routed one at stop 21 (the commit
# below); batches before it that recorded nothing ran the queue path.
ROUTED_DEFAULT_SINCE = 1796127016  # f92aaa6, 2026-12-01 12:10 UTC: native_path "auto" takes routed
