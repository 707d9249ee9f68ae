#!/usr/bin/env python3
"""Runs the tests that depend on time, rates or load (ctest label `lab` by default) N times in
a row while the machine is loaded the way CI loads it — a parallel build beside them — and
writes, per test: runs, failures, the failing assertion, the duration, and the spread of every
value the tests report as measured (`QS-MEASURED {json}` lines, qs_support.measure).

    tests/flake_hunt.py --build build/asan --runs 5 --out tests/results/flake-hunt.md

The report (Markdown, and JSON beside it) is rewritten after every run, so an interrupted
hunt keeps what it saw. Root, like the lab tests themselves. The load: a release build of
the tree in build/flake-load, cleaned and rebuilt with -j(nproc) in a loop for as long as the
hunt runs (`--load none` for an idle machine, `--load cpu` for busy loops on every core).
"""
import argparse
import contextlib
import datetime
import fcntl
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = re.compile(r"^QS-MEASURED (\{.*\})\s*$", re.M)
# unittest's failure blocks: "FAIL: test_x (module.Class.test_x)" then a traceback whose
# last line names the exception; GoogleTest's "file:line: Failure" lines.
PY_FAIL = re.compile(r"^(FAIL|ERROR): (\S+) \(([^)]*)\)", re.M)
GTEST_FAIL = re.compile(r"^(.*:\d+: Failure)$\n(.*)$", re.M)


class Load:
    """The load beside the tests, one process group, ended by its PID at stop()."""

    def __init__(self, kind, build_dir):
        self.kind, self.proc = kind, None
        if kind == "build":
            subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DQS_TESTS=OFF",
                            "-DQS_BENCH=OFF"], check=True, stdout=subprocess.DEVNULL)
            loop = (f"while :; do ninja -C '{build_dir}' -t clean >/dev/null; "
                    f"ninja -C '{build_dir}' -j{os.cpu_count()} >/dev/null 2>&1; done")
        elif kind == "cpu":
            loop = " & ".join(["while :; do :; done"] * (os.cpu_count() or 1)) + "; wait"
        else:
            return
        self.proc = subprocess.Popen(["bash", "-c", loop], start_new_session=True)

    def describe(self):
        return {"build": f"a release build of the tree, -j{os.cpu_count()}, cleaned and "
                         "rebuilt in a loop", "cpu": f"{os.cpu_count()} busy loops",
                "none": "none"}[self.kind]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def failure_lines(output):
    """The failing assertions in a test's output: for each unittest FAIL/ERROR block, the
    test and the last line of its traceback; for GoogleTest, the Failure line and the next."""
    found = []
    blocks = list(PY_FAIL.finditer(output))
    for i, m in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(output)
        body = output[m.end():end]
        last = [l for l in body.splitlines() if re.match(r"^\w*(Error|Exception)\b", l)
                or l.startswith("AssertionError")]
        found.append(f"{m.group(2)}: {(last[-1] if last else body.strip()[:200])[:300]}")
    for m in GTEST_FAIL.finditer(output):
        found.append(f"{m.group(1)} {m.group(2).strip()}"[:300])
    return found


LAB_LOCK = "/run/quicstep-lab-tests.lock"  # the one scripts/test.sh takes around its ctest


@contextlib.contextmanager
def lab_lock():
    """One lab per machine: a run waits while another clone's test.sh holds the lab. The
    lock's fd is not inherited (PEP 446), so a test's leftover child cannot keep it."""
    with open(LAB_LOCK, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"flake_hunt: another lab test run holds {LAB_LOCK}; waiting", flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run_once(build, label, regex, junit, timeout, env):
    # ctest keeps only 1 KB of a passed test's output by default: the measured values are in
    # the rest.
    cmd = ["ctest", "--test-dir", build, "--output-junit", junit, "--timeout", str(timeout),
           "--test-output-size-passed", "4000000", "--test-output-size-failed", "4000000"]
    if label:
        cmd += ["-L", label]
    if regex:
        cmd += ["-R", regex]
    with lab_lock():
        t0 = time.monotonic()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=dict(os.environ, **env))
        took = time.monotonic() - t0
    tests = []
    if os.path.exists(junit):
        for case in ET.parse(junit).getroot().iter("testcase"):
            out = (case.findtext("system-out") or "")
            tests.append({
                "name": case.get("name"),
                "status": case.get("status"),  # run, fail, notrun (skipped/disabled)
                "seconds": float(case.get("time") or 0),
                "failures": failure_lines(out) if case.get("status") == "fail" else [],
                "measured": [json.loads(m) for m in MEASURED.findall(out)],
            })
    return {"rc": res.returncode, "seconds": took, "tests": tests,
            "ctest_tail": res.stdout[-1500:]}


def spread(values):
    values = sorted(values)
    return {"n": len(values), "min": values[0], "median": statistics.median(values),
            "max": values[-1]}


def fmt(x):
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def report(meta, runs):
    per = {}
    for i, run in enumerate(runs):
        for t in run["tests"]:
            p = per.setdefault(t["name"], {"runs": 0, "failed": [], "seconds": [],
                                          "failures": [], "measured": {}})
            if t["status"] == "notrun":
                continue
            p["runs"] += 1
            p["seconds"].append(t["seconds"])
            if t["status"] == "fail":
                p["failed"].append(i + 1)
                p["failures"] += [f"run {i + 1}: {f}" for f in t["failures"]] or [
                    f"run {i + 1}: (no assertion found in the output)"]
            for m in t["measured"]:
                key = (m.get("test", ""), m["name"], m.get("unit", ""))
                entry = p["measured"].setdefault(key, {"values": [], "expected": set()})
                entry["values"].append(m["value"])
                if m.get("expected") is not None:
                    entry["expected"].add(fmt(m["expected"]) + (
                        f" [{fmt(m['low'])}, {fmt(m['high'])}]" if "low" in m else ""))
    lines = [f"# Flake hunt, {meta['date']}", "",
             f"`{meta['command']}` at commit `{meta['commit']}` on {meta['host']} "
             f"({os.cpu_count()} cores, kernel {os.uname().release}).", "",
             f"Tests: ctest {meta['selection']} in `{meta['build']}`. Load beside them: "
             f"{meta['load']}.", ""]
    failed_runs = [i + 1 for i, r in enumerate(runs) if any(t["status"] == "fail"
                                                            for t in r["tests"])]
    streak = 0
    for r in reversed(runs):
        if any(t["status"] == "fail" for t in r["tests"]):
            break
        streak += 1
    lines += [f"**{len(runs)} runs, {len(runs) - len(failed_runs)} without a failure; the last "
              f"{streak} in a row passed.**" + (f" Runs with a failure: {failed_runs}."
                                              if failed_runs else ""), "",
              "| run | started (UTC) | minutes | tests | failed | load average at the end |",
              "|---|---|---|---|---|---|"]
    for i, r in enumerate(runs):
        ran = [t for t in r["tests"] if t["status"] != "notrun"]
        bad = [t["name"] for t in ran if t["status"] == "fail"]
        lines.append(f"| {i + 1} | {r['started']} | {r['seconds'] / 60:.1f} | {len(ran)} | "
                     f"{', '.join(bad) or 0} | {r['loadavg']} |")
    lines += ["", "## Per test", "", "| test | runs | failures | seconds (min–max) |",
              "|---|---|---|---|"]
    for name, p in sorted(per.items()):
        secs = f"{min(p['seconds']):.0f}–{max(p['seconds']):.0f}" if p["seconds"] else "-"
        lines.append(f"| {name} | {p['runs']} | {len(p['failed'])} | {secs} |")
    bad = {n: p for n, p in per.items() if p["failures"]}
    if bad:
        lines += ["", "## Failing assertions", ""]
        for name, p in sorted(bad.items()):
            lines.append(f"- **{name}**")
            lines += [f"  - `{f}`" for f in p["failures"]]
    lines += ["", "## Measured values (every run)", "",
              "| test | what | unit | n | min | median | max | expected [bounds] |",
              "|---|---|---|---|---|---|---|---|"]
    for name, p in sorted(per.items()):
        for (test, what, unit), e in sorted(p["measured"].items()):
            s = spread(e["values"])
            lines.append(f"| {name} {test} | {what} | {unit} | {s['n']} | {fmt(s['min'])} | "
                         f"{fmt(s['median'])} | {fmt(s['max'])} | "
                         f"{'; '.join(sorted(e['expected'])) or '-'} |")
    return "\n".join(lines) + "\n"


def git_commit():
    res = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    return res.stdout.strip() or "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build", "asan"),
                   help="the configured, built tree whose ctest runs (default build/asan)")
    p.add_argument("--runs", type=int, default=5, help="runs in a row (default 5)")
    p.add_argument("--label", default="lab", help="ctest -L (default lab; '' for all)")
    p.add_argument("--regex", default="", help="ctest -R, to narrow the selection")
    p.add_argument("--load", choices=("build", "cpu", "none"), default="build",
                   help="what runs beside the tests (default build)")
    p.add_argument("--load-dir", default=os.path.join(ROOT, "build", "flake-load"),
                   help="the load's build directory (default build/flake-load)")
    p.add_argument("--timeout", type=int, default=1500, help="ctest --timeout per test")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set for the tests, e.g. QS_PACKAGE_PREBUILT=1 (test the .debs and "
                        "image already built instead of building them in every run)")
    p.add_argument("--out", default=os.path.join(ROOT, "tests", "results", "flake-hunt.md"),
                   help="the report (Markdown; a .json beside it)")
    args = p.parse_args()
    bad = [e for e in args.env if "=" not in e]
    if bad:
        sys.exit(f"flake_hunt: --env {bad[0]!r}: NAME=VALUE")
    env = dict(e.split("=", 1) for e in args.env)
    if os.geteuid() != 0:
        sys.exit("flake_hunt: the lab tests need root")
    if not os.path.isdir(args.build):
        sys.exit(f"flake_hunt: no build tree at {args.build}: build it first (scripts/test.sh)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    meta = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["tests/flake_hunt.py", *sys.argv[1:]]),
            "commit": git_commit(), "host": os.uname().nodename, "build": args.build,
            "selection": " ".join(x for x in (f"-L {args.label}" if args.label else "",
                                              f"-R {args.regex}" if args.regex else "",
                                              *args.env) if x)
            or "(all)"}
    load = Load(args.load, args.load_dir)
    meta["load"] = load.describe()
    runs = []
    work = tempfile.mkdtemp(prefix="qs-flake-")
    try:
        for i in range(args.runs):
            started = datetime.datetime.utcnow().strftime("%H:%M")
            print(f"flake_hunt: run {i + 1}/{args.runs} ({started} UTC)", flush=True)
            run = run_once(args.build, args.label, args.regex,
                           os.path.join(work, f"run{i + 1}.xml"), args.timeout, env)
            run["started"] = started
            run["loadavg"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
            runs.append(run)
            bad = [t["name"] for t in run["tests"] if t["status"] == "fail"]
            print(f"flake_hunt: run {i + 1}: {len(run['tests'])} tests, "
                  f"{len(bad)} failed {bad or ''} in {run['seconds'] / 60:.1f} min", flush=True)
            if not run["tests"]:
                print(run["ctest_tail"], flush=True)
            with open(args.out, "w") as f:
                f.write(report(meta, runs))
            with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
                json.dump({"meta": meta, "runs": runs}, f, indent=1)
            time.sleep(2)  # a test.sh waiting for the lab gets it now, not after the hunt
    finally:
        load.stop()
    print(f"flake_hunt: report in {args.out}")
    return 0 if all(t["status"] != "fail" for r in runs for t in r["tests"]) else 1


if __name__ == "__main__":
    sys.exit(main())
