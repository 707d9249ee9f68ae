#!/usr/bin/env python3
"""Per-flow fib rules as the selector of the native path, instead of nft marks
(client/results/2026-11-30-native-path-experiments.md): what they cost a native datagram,
whether adding or deleting one re-routes a socket's next datagram, which source address a
socket gets, and what rule changes cost. A benchmark for a design decision, not a test:
root; two namespaces of its own (qs-fibx-a sends, qs-fibx-b drops), no lab needed.

    sudo python3 -m tests.quicstepd.experiments.bench_fib_rules [--rounds 8] [--packets 400000]
            [--nrules 1000] [--ipv6] [--with-from] [--modes c_none,...] [--json out.json]
    sudo python3 -m tests.quicstepd.experiments.bench_fib_rules --functional
    sudo python3 -m tests.quicstepd.experiments.bench_fib_rules --churn [--rounds 6]

qs-fibx-a has two ways to qs-fibx-b: the native veth (qs-fibx-va) and a second veth that
stands in for the WireGuard channel (qs-fibx-ch). Table 100 routes everything to the
channel (with `src <native address>`), a catch-all rule (pref 20000) sends UDP to port 443
there, and each native flow gets a rule before it (pref 10000): `to SERVER ipproto udp
sport P dport 443 lookup main` (--with-from adds `from <native address>`, as the IPv4
figures in the README were taken; IPv4 only, see --functional for why).

Per-packet modes (default): c_* send from a connected socket (udp_blaster), u_* from an
unconnected one (fib_sender blast: each datagram routed on its own); *_none: no rules;
*_first / *_last: the catch-all and NRULES+1 flow rules, the sender's own first or after
the NRULES others; c_nft_route: no rules, an nft route chain with one counting rule instead
(today's way). Each round installs each mode, sends PACKETS 1200-byte datagrams, and fails
the run unless the native veth carried them all and the channel none (and the nft counter
saw them all); the figure is the sender's system CPU ns per datagram, median over rounds,
and its paired difference to c_none / u_none of the same round.

--functional: one socket per case sends 1000 datagrams per step while rules are added and
deleted; the device counters show where each step's datagrams went, checked against what
the README states (both families, table 100 with and without `src`). --churn: the time of
`ip -batch` rule adds and deletes at 0-4000 rules, and a connected sender's cost per
datagram while another process changes another flow's rule as fast as it can, or ~100
times a second. fib_sender.cpp is compiled into a temporary directory at start."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from tests.quicstepd.experiments import experiment_helpers as x
from tests.quicstepd.experiments.experiment_helpers import run

A, B = "qs-fibx-a", "qs-fibx-b"
VA, VB = "qs-fibx-va", "qs-fibx-vb"  # the native path
CH, CP = "qs-fibx-ch", "qs-fibx-cp"  # the channel's stand-in and its peer
CLIENT_PORT = 40000
OTHER_FLOWS_PORT = 20000  # the other flows' rules: source ports 20000, 20001, ...
CHURN_PORT = 31000  # the flow whose rule --churn adds and deletes
CHANNEL_TABLE = "100"
FLOW_PREF, CATCH_ALL_PREF = "10000", "20000"
MODES = ["c_none", "c_first", "c_last", "c_nft_route", "u_none", "u_first", "u_last"]
NFT_ROUTE = ("table inet qs_fibx {\n chain out {\n  type route hook output priority -310; "
             "policy accept;\n  udp dport 443 counter\n }\n}\n")

# The same in every mode: qs-fibx-a drops what it receives, qs-fibx-b drops at both veths'
# ingress (the channel's peer included: it has no address).
SINK_A = ("table inet qs_fibx_sink {\n chain in {\n  type filter hook input priority 0; "
          "policy drop;\n }\n}\n")
SINK_B = (f"table netdev qs_fibx_sink {{\n chain native {{\n  type filter hook ingress device "
          f"{VB} priority 0; policy drop;\n }}\n chain channel {{\n  type filter hook ingress "
          f"device {CP} priority 0; policy drop;\n }}\n}}\n")


class Family:
    """Addresses and the ip command of one address family."""

    def __init__(self, v6):
        self.v6 = v6
        self.name = "IPv6" if v6 else "IPv4"
        self.ip = ["ip", "-6"] if v6 else ["ip", "-4"]
        if v6:
            self.native, self.server, self.channel = ("2001:db8:253::1", "2001:db8:253::2",
                                                      "2001:db8:253::9")
        else:
            self.native, self.server, self.channel = ("198.18.253.1", "198.18.253.2",
                                                      "198.18.253.9")


V4, V6 = Family(False), Family(True)


def setup():
    teardown()
    for ns in (A, B):
        run("ip", "netns", "add", ns)
        run("ip", "link", "set", "lo", "up", ns=ns)
    run("ip", "link", "add", VA, "netns", A, "type", "veth", "peer", "name", VB, "netns", B)
    # A veth rather than a dummy device: the kernel need not have the dummy module.
    run("ip", "link", "add", CH, "netns", A, "type", "veth", "peer", "name", CP, "netns", B)
    run("ip", "link", "set", CP, "up", ns=B)
    for ns, dev, end in ((A, VA, "native"), (B, VB, "server")):
        run("ip", "addr", "add", getattr(V4, end) + "/30", "dev", dev, ns=ns)
        run("ip", "-6", "addr", "add", getattr(V6, end) + "/64", "dev", dev, "nodad", ns=ns)
        run("ip", "link", "set", dev, "up", ns=ns)
    run("ip", "addr", "add", V4.channel + "/32", "dev", CH, ns=A)
    run("ip", "-6", "addr", "add", V6.channel + "/128", "dev", CH, "nodad", ns=A)
    run("ip", "link", "set", CH, "up", ns=A)
    # Permanent neighbours on both ways out, so that nothing waits for resolution.
    mac_a = run("cat", f"/sys/class/net/{VA}/address", ns=A).strip()
    mac_b = run("cat", f"/sys/class/net/{VB}/address", ns=B).strip()
    mac_cp = run("cat", f"/sys/class/net/{CP}/address", ns=B).strip()
    for fam in (V4, V6):
        for dev, mac in ((VA, mac_b), (CH, mac_cp)):
            run(*fam.ip, "neigh", "replace", fam.server, "lladdr", mac, "dev", dev, "nud",
                "permanent", ns=A)
        run(*fam.ip, "neigh", "replace", fam.native, "lladdr", mac_a, "dev", VB, "nud",
            "permanent", ns=B)
    run("nft", "-f", "-", ns=A, stdin=SINK_A)
    run("nft", "-f", "-", ns=B, stdin=SINK_B)


def teardown():
    for ns in (A, B):
        run("ip", "netns", "del", ns, check=False)


def device_counts():
    return {"va_tx": x.device_packets(A, VA, "tx_packets"),
            "ch_tx": x.device_packets(A, CH, "tx_packets"),
            "vb_rx": x.device_packets(B, VB, "rx_packets")}


def took(before, after, packets):
    """'native' or 'channel' if that way carried all packets and the other none (but
    strays), else None."""
    d = {k: after[k] - before[k] for k in before}
    if d["va_tx"] >= packets and d["vb_rx"] >= packets and d["ch_tx"] <= x.STRAY_PACKETS:
        return "native"
    if d["ch_tx"] >= packets and d["va_tx"] <= x.STRAY_PACKETS:
        return "channel"
    return None


def flow_rule(fam, sport, source=None):
    """The selectors and action of the rule that sends one flow the native way."""
    return (["pref", FLOW_PREF] + (["from", source] if source else []) +
            ["to", fam.server, "ipproto", "udp", "sport", str(sport), "dport", "443",
             "lookup", "main"])


def channel_routing(fam, with_src=True):
    """Table 100 to the channel and the catch-all rule: what a flow not yet decided takes."""
    run(*fam.ip, "route", "replace", "default", "dev", CH, *(["src", fam.native] if with_src
                                                             else []),
        "table", CHANNEL_TABLE, ns=A)
    run(*fam.ip, "rule", "add", "pref", CATCH_ALL_PREF, "ipproto", "udp", "dport", "443",
        "lookup", CHANNEL_TABLE, ns=A)


def remove_channel_routing(fam):
    run(*fam.ip, "rule", "del", "pref", CATCH_ALL_PREF, ns=A, check=False)
    run(*fam.ip, "route", "flush", "table", CHANNEL_TABLE, ns=A, check=False)


def rule_batch(fam, op, rules):
    """Adds or deletes rules (flow_rule lists) with one `ip -batch`; returns its seconds."""
    text = "".join(f"rule {op} {' '.join(r)}\n" for r in rules)
    started = time.perf_counter()
    run(*fam.ip, "-batch", "-", ns=A, stdin=text)
    return time.perf_counter() - started


def rules_now(fam):
    return run(*fam.ip, "rule", "show", ns=A).strip().splitlines()


# ---- per-packet cost -------------------------------------------------------------------

def cost_rules(fam, mode, nrules, source):
    own = [flow_rule(fam, CLIENT_PORT, source)]
    others = [flow_rule(fam, OTHER_FLOWS_PORT + i, source) for i in range(nrules)]
    return own + others if mode.endswith("_first") else others + own


def cost_mode_up(fam, mode, nrules, source):
    """Installs mode; returns the seconds of the rules' ip -batch (None: no rules)."""
    if mode == "c_nft_route":
        run("nft", "-f", "-", ns=A, stdin=NFT_ROUTE)
    elif mode.endswith(("_first", "_last")):
        channel_routing(fam)
        return rule_batch(fam, "add", cost_rules(fam, mode, nrules, source))
    return None


def cost_mode_down(fam, mode, nrules, source, default_rules):
    """Removes mode; returns (nft packets counted or None, seconds of the rule deletes or
    None). Fails if any rule is left."""
    counted, del_s = None, None
    if mode == "c_nft_route":
        out = run("nft", "list", "table", "inet", "qs_fibx", ns=A)
        counted = sum(int(line.split("counter packets")[1].split()[0])
                      for line in out.splitlines() if "counter packets" in line)
        run("nft", "delete", "table", "inet", "qs_fibx", ns=A)
    elif mode.endswith(("_first", "_last")):
        del_s = rule_batch(fam, "del", cost_rules(fam, mode, nrules, source))
        remove_channel_routing(fam)
    if rules_now(fam) != default_rules:
        raise RuntimeError(f"{mode}: rules left behind: {rules_now(fam)}")
    return counted, del_s


def check_rule_positions(fam, modes, nrules, source, default_rules):
    """The sender's own rule is the first walked after `lookup local` in *_first and the
    last of the flow rules in *_last: what the modes claim to measure."""
    for mode, index in (("c_first", 1), ("c_last", nrules + 1)):
        if mode not in modes and "u" + mode[1:] not in modes:
            continue
        cost_mode_up(fam, mode, nrules, source)
        lines = rules_now(fam)
        own = [i for i, line in enumerate(lines) if f"sport {CLIENT_PORT} " in line + " "]
        cost_mode_down(fam, mode, nrules, source, default_rules)
        if own != [index]:
            raise RuntimeError(f"{mode}: the sender's rule is line {own} of {len(lines)}, "
                               f"not {index}")
        print(f"{mode[2:]}: {len(lines)} rules, the sender's own is number {index} "
              "(0: lookup local)", flush=True)


def cost_blast(fam, mode, packets, blaster, sender):
    if mode.startswith("c_"):
        out = run(blaster, fam.server, str(packets), str(CLIENT_PORT), "443", ns=A)
    else:  # bound to the native address: with --with-from a wildcard would never match
        out = run(sender, "blast", fam.server, str(packets), str(CLIENT_PORT), "443",
                  fam.native, ns=A)
    sys_ns, wall_ns, failed = out.split()
    return float(sys_ns), float(wall_ns), int(failed)


def run_cost(args, fam, blaster, sender):
    modes = args.modes.split(",")
    source = fam.native if args.with_from else None
    sys_ns = {m: [] for m in modes}
    wall_ns = {m: [] for m in modes}
    rule_s = {m: [] for m in modes}
    default_rules = rules_now(fam)
    check_rule_positions(fam, modes, args.nrules, source, default_rules)
    cost_blast(fam, "c_none", args.packets // 4, blaster, sender)  # untimed warm-up
    cost_blast(fam, "u_none", args.packets // 4, blaster, sender)
    for r in range(args.rounds):
        for m in modes:
            add_s = cost_mode_up(fam, m, args.nrules, source)
            before = device_counts()
            s, w, failed = cost_blast(fam, m, args.packets, blaster, sender)
            after = device_counts()
            counted, del_s = cost_mode_down(fam, m, args.nrules, source, default_rules)
            if took(before, after, args.packets) != "native":
                d = {k: after[k] - before[k] for k in before}
                raise RuntimeError(f"{m}: {args.packets} datagrams not all on the native "
                                   f"veth: {d}")
            if counted is not None and counted < args.packets:
                raise RuntimeError(f"{m}: the nft rule counted {counted} of {args.packets}")
            if failed:
                print(f"warning: {m}: {failed} failed sendmmsg calls", flush=True)
            sys_ns[m].append(s)
            wall_ns[m].append(w)
            if add_s is not None:
                rule_s[m].append((add_s, del_s))
        print(f"round {r + 1}/{args.rounds}: " + "  ".join(
            f"{m} {sys_ns[m][-1]:.0f}" for m in modes), flush=True)
    selectors = "from, to, ipproto, sport, dport" if source else "to, ipproto, sport, dport"
    res = x.print_table(
        f"system CPU ns per {fam.name} datagram sent, median of {args.rounds} rounds of "
        f"{args.packets}; {args.nrules + 1} flow rules ({selectors}) in *_first/*_last; "
        "paired d: against c_none / u_none of the same round", sys_ns, wall_ns,
        lambda m: "c_none" if m.startswith("c_") else "u_none")
    for m, times in rule_s.items():
        if times:
            print(f"  {m}: ip -batch of {args.nrules + 1} rule adds "
                  f"{statistics.median(t[0] for t in times) * 1e3:.1f} ms, deletes "
                  f"{statistics.median(t[1] for t in times) * 1e3:.1f} ms (median)")
    return {"sys": sys_ns, "wall": wall_ns, "rule_batch_s": rule_s, "summary": res}


# ---- functional checks -----------------------------------------------------------------

STEP_PACKETS = 1000


class StepSocket:
    """A fib_sender `steps` process in qs-fibx-a: one socket, driven line by line."""

    def __init__(self, sender, fam, sport, bind_to, connected):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", A, sender, "steps", fam.server, str(sport), "443", bind_to,
             "connected" if connected else "unconnected"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "ready":
            self.close()
            raise RuntimeError(f"fib_sender steps: {' '.join(ready) or 'no answer'}")
        self.source = ready[1]

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def send(self):
        """Where STEP_PACKETS datagrams went: 'native', 'channel' or a count summary."""
        before = device_counts()
        answer = self.command(f"send {STEP_PACKETS}")
        after = device_counts()
        if answer != f"sent {STEP_PACKETS} err 0 -":
            return f"send failed: {answer}"
        way = took(before, after, STEP_PACKETS)
        return way or "split " + " ".join(f"{k} {after[k] - before[k]}" for k in before)

    def name(self):
        return self.command("name").split()[1]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # this process only, by its handle
                self.proc.wait()


def functional_case(sender, fam, with_src, port, record):
    """The README's statements on re-routing and source addresses, for one family and one
    table-100 route. record(step, expected, observed, binding): binding False marks what
    the README reports as seen, but depends on timing."""
    def rule(op, sport, source=None):
        run(*fam.ip, "rule", op, *flow_rule(fam, sport, source), ns=A)

    channel_routing(fam, with_src)
    s = StepSocket(sender, fam, port, "any", connected=True)
    try:
        if with_src:
            record("connect: source address", fam.native, s.source)
            record("catch-all only", "channel", s.send())
            rule("add", port)
            record("+ flow rule", "native", s.send())
            rule("del", port)
            record("- flow rule", "channel", s.send())
            rule("add", port)
            record("+ flow rule again", "native", s.send())
            rule("del", port)
            rule("add", port, fam.native)
            record("+ flow rule with from <native>", "native", s.send())
            rule("del", port, fam.native)
        else:
            record("connect: source address", fam.channel, s.source)
            record("catch-all only", "channel", s.send())
            rule("add", port, fam.native)
            record("+ flow rule with from <native>", "channel", s.send())
            rule("del", port, fam.native)
            rule("add", port)
            record("+ flow rule: way", "native", s.send())
            record("+ flow rule: source address", fam.channel, s.name())
            rule("del", port)
    finally:
        s.close()
    if not with_src:
        remove_channel_routing(fam)
        return

    rule("add", port + 1)
    s = StepSocket(sender, fam, port + 1, "any", connected=True)
    record("connected after its flow rule", "native", s.send())
    s.close()
    rule("del", port + 1)

    # IPv6 connect picks the source from a lookup made with saddr ::, and does not look up
    # again with it (IPv4 does): a `from` rule is missed until the cached route goes stale.
    rule("add", port + 2, fam.native)
    s = StepSocket(sender, fam, port + 2, "any", connected=True)
    record("connected after its flow rule with from <native>",
           "channel" if fam.v6 else "native", s.send(), binding=not fam.v6)
    s.close()
    rule("del", port + 2, fam.native)

    # An unconnected socket bound to the wildcard has no source address at lookup time.
    for source, bind_to, expected in ((fam.native, "any", "channel"), (None, "any", "native"),
                                      (fam.native, fam.native, "native")):
        rule("add", port + 3, source)
        s = StepSocket(sender, fam, port + 3, bind_to, connected=False)
        bound = "any" if bind_to == "any" else "<native>"
        record(f"unconnected, bound {bound}, flow rule{' with from <native>' * bool(source)}",
               expected, s.send())
        s.close()
        rule("del", port + 3, source)
    remove_channel_routing(fam)


def run_functional(sender):
    results = []
    port = 41000
    for fam in (V4, V6):
        default_rules = rules_now(fam)
        for with_src in (True, False):
            route = f"table 100: default dev {CH}" + (" src <native>" if with_src else "")

            def record(step, expected, observed, binding=True):
                results.append({"family": fam.name, "route": route, "step": step,
                                "expected": expected, "observed": observed,
                                "binding": binding})
            functional_case(sender, fam, with_src, port, record)
            port += 10
        if rules_now(fam) != default_rules:
            raise RuntimeError(f"{fam.name}: rules left behind: {rules_now(fam)}")
    print(f"where {STEP_PACKETS} datagrams of one socket went, step by step (native veth, "
          "channel veth, or the socket's source address):")
    last = None
    failed = 0
    for r in results:
        if (r["family"], r["route"]) != last:
            last = (r["family"], r["route"])
            print(f"  {r['family']}, {r['route']}; catch-all pref {CATCH_ALL_PREF} udp dport "
                  f"443 lookup 100, flow rules pref {FLOW_PREF}")
        ok = r["observed"] == r["expected"]
        verdict = "ok" if ok else ("DIFFERS" if r["binding"] else "differs (timing)")
        failed += not ok and r["binding"]
        print(f"    {r['step']:55s} {r['observed']:16s} expected {r['expected']:16s} "
              f"{verdict}")
    print("  (timing): the README's observation depends on when the cached route goes "
          "stale; not a failure")
    if failed:
        raise RuntimeError(f"{failed} functional step(s) differ from the README")
    return results


# ---- rule churn ------------------------------------------------------------------------

def churn_rule(fam, op):
    return f"rule {op} {' '.join(flow_rule(fam, CHURN_PORT))}"


def start_churn(fam, kind, tmp):
    """Another process in qs-fibx-a adds and deletes CHURN_PORT's rule: 'max' as fast as
    ip -batch goes (500 adds and deletes per batch), '100' one `ip rule` process every
    10 ms. Prints one 'x' per batch / per operation, counted at the end."""
    ip = " ".join(fam.ip)
    if kind == "max":
        batch = os.path.join(tmp, "churn.batch")
        with open(batch, "w") as f:
            f.write(f"{churn_rule(fam, 'add')}\n{churn_rule(fam, 'del')}\n" * 500)
        script = f"while :; do {ip} -batch {batch} || exit 1; echo x; done"
    else:
        script = (f"while :; do {ip} {churn_rule(fam, 'add')}; echo x; sleep 0.01; "
                  f"{ip} {churn_rule(fam, 'del')}; echo x; sleep 0.01; done")
    # its own session: ended with its process group, by the id of the process started here
    return subprocess.Popen(["ip", "netns", "exec", A, "sh", "-c", script],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)


def stop_churn(fam, proc, kind):
    """Ends the churn process group; returns the rule operations it made."""
    os.killpg(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate()
    run(*fam.ip, "rule", "del", *flow_rule(fam, CHURN_PORT), ns=A, check=False)
    return out.count("x") * (1000 if kind == "max" else 1)


CHURN_MODES = [("first", None), ("first", "max"), ("last", None), ("last", "max"),
               ("last", "100")]


def run_churn(args, fam, blaster, tmp):
    default_rules = rules_now(fam)
    # 1. ip -batch of 1000 adds into a list of 0..4000 rules, then the deletes back.
    timings = []
    for k in range(5):
        rules = [flow_rule(fam, OTHER_FLOWS_PORT + k * 1000 + i) for i in range(1000)]
        timings.append(("adds", k * 1000, rule_batch(fam, "add", rules)))
    for k in reversed(range(5)):
        rules = [flow_rule(fam, OTHER_FLOWS_PORT + k * 1000 + i) for i in range(1000)]
        timings.append(("deletes", k * 1000 + 1000, rule_batch(fam, "del", rules)))
    singles = []
    for i in range(20):  # one `ip` process per rule: what shelling out would cost
        started = time.perf_counter()
        run(*fam.ip, "-n", A, "rule", "add", *flow_rule(fam, CHURN_PORT + 1 + i))
        singles.append(time.perf_counter() - started)
        run(*fam.ip, "-n", A, "rule", "del", *flow_rule(fam, CHURN_PORT + 1 + i))
    if rules_now(fam) != default_rules:
        raise RuntimeError(f"rules left behind: {rules_now(fam)}")
    print(f"{fam.name} rule changes, one ip -batch of 1000 (wall time, process start "
          "included):")
    for op, present, seconds in timings:
        print(f"  1000 {op:7s} with {present:4d} rules in the list before: "
              f"{seconds * 1e3:6.1f} ms ({seconds * 1e3:.1f} us per rule)")
    print(f"  one `ip rule add` process: {statistics.median(singles) * 1e3:.2f} ms "
          "(median of 20)", flush=True)

    # 2. a connected sender behind NRULES other rules while another flow's rule churns
    def install(order):
        channel_routing(fam)
        own = [flow_rule(fam, CLIENT_PORT)]
        others = [flow_rule(fam, OTHER_FLOWS_PORT + i) for i in range(args.nrules)]
        rule_batch(fam, "add", own + others if order == "first" else others + own)

    def uninstall():
        rule_batch(fam, "del", [flow_rule(fam, CLIENT_PORT)] +
                   [flow_rule(fam, OTHER_FLOWS_PORT + i) for i in range(args.nrules)])
        remove_channel_routing(fam)

    run(blaster, fam.server, str(args.packets // 4), str(CLIENT_PORT), "443", ns=A)
    data = {f"{order}/{churn or 'none'}": [] for order, churn in CHURN_MODES}
    for r in range(args.rounds):
        for order, churn in CHURN_MODES:
            install(order)
            proc = None
            churn_started = time.perf_counter()
            try:
                if churn:
                    proc = start_churn(fam, churn, tmp)
                    time.sleep(0.2)  # under way before the sender starts
                before = device_counts()
                out = run(blaster, fam.server, str(args.packets), str(CLIENT_PORT), "443", ns=A)
                after = device_counts()
            finally:
                ops = stop_churn(fam, proc, churn) if proc else 0
            churn_s = time.perf_counter() - churn_started  # the rate over the churn's life
            uninstall()
            if took(before, after, args.packets) != "native":
                d = {k: after[k] - before[k] for k in before}
                raise RuntimeError(f"{order}/{churn}: datagrams not all on the native veth "
                                   f"during the churn: {d}")
            sys_ns, wall_ns, _ = out.split()
            data[f"{order}/{churn or 'none'}"].append(
                {"sys": float(sys_ns), "wall": float(wall_ns), "rule_ops_per_s": ops / churn_s})
        print(f"round {r + 1}/{args.rounds}: " + "  ".join(
            f"{k} {v[-1]['sys']:.0f}" for k, v in data.items()), flush=True)
    if rules_now(fam) != default_rules:
        raise RuntimeError(f"rules left behind: {rules_now(fam)}")
    print(f"connected sender, own rule first or after {args.nrules} others, while another "
          f"flow's rule is added and deleted (none / max: ip -batch loop / 100: ~100 per s); "
          f"system CPU ns per {fam.name} datagram, median of {args.rounds} rounds of "
          f"{args.packets}, paired d against the same order without churn:")
    print(f"  {'mode':12s} {'sys':>7s} {'paired d':>9s} {'wall':>7s} {'rule ops/s':>11s}")
    summary = {}
    for k, v in data.items():
        base = data[k.split("/")[0] + "/none"]
        s = x.paired_summary([a["sys"] for a in v], [b["sys"] for b in base])
        s["wall"] = statistics.median(a["wall"] for a in v)
        s["rule_ops_per_s"] = statistics.median(a["rule_ops_per_s"] for a in v)
        summary[k] = s
        print(f"  {k:12s} {s['median']:7.0f} {s['paired']:+9.0f} {s['wall']:7.0f} "
              f"{s['rule_ops_per_s']:11.0f}")
    return {"rule_batch_s": timings, "single_ip_rule_add_s": singles, "blast": data,
            "summary": summary}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--packets", type=int, default=400000)
    ap.add_argument("--nrules", type=int, default=1000,
                    help="flow rules of other flows besides the sender's own")
    ap.add_argument("--ipv6", action="store_true", help="send over IPv6 instead of IPv4")
    ap.add_argument("--with-from", action="store_true",
                    help="flow rules also match `from <native address>` (IPv4 only)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--functional", action="store_true",
                    help="check re-routing and source addresses instead of measuring")
    ap.add_argument("--churn", action="store_true",
                    help="measure rule changes and their effect on a connected sender")
    ap.add_argument("--json", help="write every round's figures and the summary here")
    args = ap.parse_args()
    for m in args.modes.split(","):
        if m not in MODES:
            ap.error(f"unknown mode {m}")
    if args.with_from and args.ipv6:
        # a socket connected while its `from` rule exists may stay on the channel
        ap.error("--with-from is IPv4 only (see --functional)")
    x.require_root_and_tools(["ip", "nft", "c++", "sh"])
    blaster = x.find_udp_blaster()
    fam = V6 if args.ipv6 else V4

    started = time.time()
    results = {"kernel": os.uname().release, "rounds": args.rounds, "packets": args.packets,
               "nrules": args.nrules, "family": fam.name, "with_from": args.with_from}
    with tempfile.TemporaryDirectory(prefix="qs-fibx-") as tmp:
        sender = x.compile_c("c++", "fib_sender.cpp", os.path.join(tmp, "fib_sender"),
                             ["-std=c++17", "-Werror"])
        try:
            setup()
            if args.functional:
                results["functional"] = run_functional(sender)
            if args.churn:
                results["churn"] = run_churn(args, fam, blaster, tmp)
            if not (args.functional or args.churn):
                results["cost"] = run_cost(args, fam, blaster, sender)
        finally:
            teardown()
    print(f"elapsed {time.time() - started:.0f} s; kernel {os.uname().release}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
