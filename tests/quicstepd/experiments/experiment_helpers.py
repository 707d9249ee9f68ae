"""What bench_hook_cost.py and bench_fib_rules.py share: running commands (in a namespace),
the preconditions (root, tools), compiling their C/C++/BPF helpers into a temporary
directory at run time (they are not part of the CMake build, so CI does not build them),
device counters, and the per-round statistics."""
import os
import shutil
import statistics
import subprocess
import sys

from qs_support import binaries

HERE = os.path.dirname(os.path.abspath(__file__))

# Packets a device may carry besides the benchmark's own (IPv6 router solicitations and MLD
# reports of freshly brought-up links).
STRAY_PACKETS = 10


def run(*cmd, ns=None, stdin=None, check=True):
    """Runs cmd (in namespace ns) and returns its stdout; raises with its stderr on failure."""
    full = ["ip", "netns", "exec", ns, *cmd] if ns else list(cmd)
    r = subprocess.run(full, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {r.stderr.strip()}")
    return r.stdout


def require_root_and_tools(tools):
    """Exits with a message naming what is missing: the benchmarks create namespaces and
    load nft rules and BPF programs, and compile their helpers first."""
    if os.geteuid() != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: needs root (network namespaces, nft, BPF)")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        sys.exit(f"{os.path.basename(sys.argv[0])}: missing tools: {', '.join(missing)}")


def find_udp_blaster():
    """The build's udp_blaster (qs_support.binaries: QS_BUILD, default build/release)."""
    try:
        return binaries.path("udp_blaster")
    except FileNotFoundError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {e}; build the project first")


def compile_c(compiler, source, output, flags=(), libs=()):
    """Compiles one of this folder's sources (source: its file name) to output. libs come
    after the source: the linker resolves symbols left to right."""
    cmd = [compiler, "-O2", "-Wall", *flags, os.path.join(HERE, source), "-o", output, *libs]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compiling {source} failed:\n  {' '.join(cmd)}\n{r.stderr}")
    return output


def multiarch_include():
    """-I/usr/include/<triplet>: clang -target bpf does not search the host's multiarch
    directory, where Debian keeps asm/types.h (included by linux/bpf.h)."""
    for cc in ("gcc", "cc"):
        if shutil.which(cc):
            r = subprocess.run([cc, "-print-multiarch"], capture_output=True, text=True)
            triplet = r.stdout.strip()
            if r.returncode == 0 and triplet and os.path.isdir(f"/usr/include/{triplet}"):
                return [f"-I/usr/include/{triplet}"]
    return []


def device_packets(ns, dev, what):
    """A device's rx_packets or tx_packets, read in its namespace."""
    return int(run("cat", f"/sys/class/net/{dev}/statistics/{what}", ns=ns))


def paired_summary(samples, base):
    """Median of samples, and the median and quartiles of (sample - base of the same round):
    pairing by round takes out the drift between rounds (±30-40 ns here)."""
    deltas = sorted(a - b for a, b in zip(samples, base))
    quart = statistics.quantiles(deltas, n=4) if len(deltas) > 1 else [deltas[0]] * 3
    return {"median": statistics.median(samples), "paired": statistics.median(deltas),
            "q1": quart[0], "q3": quart[2]}


def print_table(title, sys_ns, wall_ns, base_of):
    """One line per mode: medians of system and wall ns per datagram, and the paired delta
    to the mode's baseline (base_of(mode)) with its interquartile range. Returns the
    figures for --json."""
    print(title)
    print(f"  {'mode':20s} {'sys':>7s} {'paired d':>9s} {'p25..p75 of d':>17s} {'wall':>7s}")
    res = {}
    for m in sys_ns:
        base = base_of(m)
        s = paired_summary(sys_ns[m], sys_ns[base]) if base in sys_ns else \
            {"median": statistics.median(sys_ns[m]), "paired": float("nan"),
             "q1": float("nan"), "q3": float("nan")}
        s["wall"] = statistics.median(wall_ns[m])
        res[m] = s
        spread = f"{s['q1']:+.0f}..{s['q3']:+.0f}"
        print(f"  {m:20s} {s['median']:7.0f} {s['paired']:+9.0f} {spread:>17s} "
              f"{s['wall']:7.0f}")
    return res
