"""Link emulation: rate with tbf, delay and loss with the project's delay line.

This kernel has no netem. All delayed links end at the inet router, so one delay-line
process in qs-inet serves every link, one nfqueue per link: a packet is queued once when
it arrives from a link (prerouting, by input interface) and once when it leaves on a link
(postrouting, by output interface), so crossing the router from link X to link Y adds
delay(X) + delay(Y), in each direction. The rules use `bypass`: while no delay line
listens on a queue, packets pass undelayed (fail-open; the RTT tests catch that). The
rules are iptables-nft NFQUEUE targets in the mangle table: this kernel has no nft
`queue` expression.

Rates are tbf qdiscs on both ends of a link (one per direction); the channel's rate is a
tbf on both WireGuard interfaces (the client's egress is the upload, the provider's the
download), so it shapes the inner packets, as a provider's per-user limit would.
"""
import os
import time

from . import state
from . import topology as topo
from .shell import LabError, run, ns

QUEUE_BASE = 1  # queue numbers: QUEUE_BASE + index of the link in topology.LINKS
DELAY_HOST = "inet"
ENV_DELAY_LINE = "QSLAB_DELAY_LINE"
RT_PRIORITY = int(__import__("os").environ.get("QSLAB_DELAY_RT_PRIORITY", "20"))  # 0: off


def find_delay_line():
    """The delay-line binary: $QSLAB_DELAY_LINE, else the release or ASan build; when
    neither has it (a fresh clone), builds it into build/release (only that target)."""
    if os.environ.get(ENV_DELAY_LINE):
        return os.environ[ENV_DELAY_LINE]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for build in ("build/release", "build/asan"):
        cand = os.path.join(root, build, "lab", "qs_delay_line")
        if os.access(cand, os.X_OK):
            return cand
    print("qslab: building qs_delay_line into build/release (first use)", flush=True)
    build = os.path.join(root, "build", "release")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        run("cmake", "-S", root, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            timeout=300)
    run("cmake", "--build", build, "--target", "qs_delay_line", timeout=600)
    return os.path.join(build, "lab", "qs_delay_line")


def _tbf(netns, dev, rate_mbit):
    rate_bps = rate_mbit * 1e6
    # Burst: 4 ms worth, at least two full-size frames; queue: 100 ms worth, so a TCP
    # flow's window fits at the lab's RTTs without tail drops distorting the rate.
    burst = max(3200, int(rate_bps / 8 * 0.004))
    run("ip", "netns", "exec", netns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
        "rate", f"{int(rate_bps)}bit", "burst", str(burst), "latency", "100ms")


def apply_rates(profile):
    for l in topo.LINKS:
        em = profile.links.get(l.name)
        if em and em.rate_mbit > 0:
            _tbf(topo.netns(l.a), l.a_if, em.rate_mbit)
            _tbf(topo.netns(l.b), l.b_if, em.rate_mbit)
    if profile.channel_rate_mbit > 0:
        _tbf(topo.netns("client"), topo.CHANNEL.client_if, profile.channel_rate_mbit)
        _tbf(topo.netns("provider"), topo.CHANNEL.provider_if, profile.channel_rate_mbit)


def delayed_links(profile):
    """[(link, queue number, LinkEmulation)] for links that need the delay line."""
    out = []
    for i, l in enumerate(topo.LINKS):
        em = profile.links.get(l.name)
        if em and (em.delay_ms > 0 or em.loss > 0):
            if l.b != DELAY_HOST:
                raise LabError(f"link {l.name}: delay/loss only on links to {DELAY_HOST}")
            out.append((l, QUEUE_BASE + i, em))
    return out


def start_delay_line(profile, procs, max_held=None):
    links = delayed_links(profile)
    if not links:
        return None
    argv = [find_delay_line()]
    for l, q, em in links:
        spec = f"{q}:{em.delay_ms * 1000:.0f}us"
        if em.loss > 0:
            spec += f":{em.loss}"
        argv += ["--queue", spec]
    if max_held:
        argv += ["--max-held", str(max_held)]
    # Real-time priority: netem works in softirq context, ahead of every process; without
    # it, delays grow tails of several ms whenever the machine is busy (lab/README.md).
    argv += ["--rt-priority", str(RT_PRIORITY)]
    argv += ["--stats-file", state.path("delay_line.stats.json")]
    n = topo.netns(DELAY_HOST)
    proc = state.start_daemon("delay_line", n, argv)
    procs.append(proc)
    # Ready once it has bound its queues (it prints "ready"); rules go in after that.
    for _ in range(100):
        state.check_alive(proc, "delay_line")
        if "ready" in state.read_log("delay_line"):
            break
        time.sleep(0.05)
    else:
        raise LabError("delay line did not become ready: " + state.read_log("delay_line"))
    # iptables-nft's NFQUEUE target (xt): this kernel lacks nft's native queue expression.
    # IPv6 neighbour discovery is not emulated, as ARP is not (it is not IP): a lost
    # neighbour solicitation would stall a next hop for a second and overflow its
    # unresolved queue, a loss that IPv4 would not see.
    for chain in ("PREROUTING", "POSTROUTING"):
        for icmp_type in ("router-solicitation", "router-advertisement", "neighbour-solicitation",
                          "neighbour-advertisement", "redirect"):
            ns(n, "ip6tables", "-w", "-t", "mangle", "-A", chain, "-p", "ipv6-icmp",
               "--icmpv6-type", icmp_type, "-j", "RETURN")
    for l, q, _ in links:
        for tool in ("iptables", "ip6tables"):
            for chain, flag in (("PREROUTING", "-i"), ("POSTROUTING", "-o")):
                ns(n, tool, "-w", "-t", "mangle", "-A", chain, flag, l.b_if, "-j", "NFQUEUE",
                   "--queue-num", str(q), "--queue-bypass")
    return proc
