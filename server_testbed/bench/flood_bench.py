#!/usr/bin/env python3
"""Flood benchmark (issue 9): legitimate success and latency against attack rate.

QUIC: quicstep-flood sends encrypted v1 Initials from spoofed lab sources at a paced rate
while quicstep-load makes fresh connections at a fixed rate (GET /bytes/1000, no migration).
Modes: `noretry` (plain workers), `retry` (host Retry in the workers, --retry), `gate`
(quicstep-gate in front of the workers; only when its binary exists).
TCP: quicstep-flood --variant syn against quicstep-https while https_probe.py makes fresh
HTTPS connections. Modes: `none` (tcp_syncookies=0), `cookies` (tcp_syncookies=1),
`synproxy` (nftables synproxy in the server namespace).

Pinning (2 cores): the server side that is measured runs on CPU 0 (quicstep-server with one
worker, quicstep-https); CPU 1 carries the attacker, the legitimate client, the kernel's
veth receive work that their sends trigger, and the gate (gate mode). The gate therefore
shares its core with the generator: the per-core figures use the CPU each component really
used (/proc/<pid>/stat over the measurement window) as well as nominal cores.

From the repository's root:

  python3 -m server_testbed.bench.flood_bench --build build/release --out /tmp/flood   # ~6 min
  python3 -m server_testbed.bench.flood_bench --build build/release --quick            # ~1 min

Writes flood_quic.csv, flood_tcp.csv, flood_quic.png, flood_tcp.png and flood_report.md in
--out; prints the report. Root; throwaway namespaces qs-fld-s / qs-fld-c (flood_env.py).
"""
import argparse
import csv
import json
import math
import os
import sys
import time

from qs_support import binaries as qs_binaries
from qs_support.stats import median, percentile as _percentile
from server_testbed.bench import flood_env as env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = "server_testbed.tcp.https_probe"  # run as a module from the repository's root
QUIC_MODES = ("noretry", "retry", "gate", "gate-cpu1")
# Measured only when listed in --modes: the gate on the worker's core sending its Retries
# by AF_PACKET (quicstep-gate --tx packet; server_testbed/gate/README.md, capacity).
QUIC_EXTRA_MODES = ("gate-packet",)
TCP_MODES = ("none", "cookies", "synproxy")
SUCCESS_TARGET = 0.99
# The server side and the legitimate client run at nice -10: the generator (nice 0) must not
# starve them by priority, nor must other work on this shared machine (builds).
DEFENDER_NICE = -10

SYNPROXY_RULES = """
table inet qs_fld_synproxy {{
  chain pre {{
    type filter hook prerouting priority raw; policy accept;
    tcp dport 443 tcp flags syn notrack
  }}
  chain in {{
    type filter hook input priority filter; policy accept;
    tcp dport 443 ct state invalid,untracked synproxy mss 1460 wscale {wscale} timestamp sack-perm
    ct state invalid drop
  }}
}}
"""


def backend_wscale(ns):
    """The window scale the namespace's kernel announces (tcp_select_initial_window): the
    synproxy's mss and wscale must be the backend's own (nft(8), synproxy statement)."""
    space = max(int(env.netns(ns, "sysctl", "-n", "net.ipv4.tcp_rmem").stdout.split()[2]),
                int(env.netns(ns, "sysctl", "-n", "net.core.rmem_max").stdout))
    wscale = 0
    while space > 65535 and wscale < 14:
        space >>= 1
        wscale += 1
    return wscale


def percentile(values, p):
    return _percentile(values, p)

def binaries(build, gate_override):
    b = {}
    for key, name in (("server", "quicstep-server"), ("load", "quicstep-load"),
                      ("flood", "quicstep-flood"), ("https", "quicstep-https")):
        try:
            b[key] = qs_binaries.path(name, build=build)
        except FileNotFoundError as e:
            sys.exit(f"flood_bench: {key}: {e}")
    gate = gate_override or qs_binaries.path("quicstep-gate", required=False, build=build)
    b["gate"] = gate if gate and os.access(gate, os.X_OK) else None
    return b

def sum_workers(stats, key):
    return sum(w.get(key, 0) for w in stats.get("workers", [])) if stats else 0


def start_flood(args, bins, work, variant, rate, seconds, pool=0, target=env.S4, port=443):
    """pool > 0: that many Initials built before the clock starts and cycled (the generator
    then reaches ~2x the rate); only for stateless defences, where a repeated DCID costs the
    same as a new one. pool = 0: a fresh DCID and ClientHello for every packet."""
    if rate <= 0:
        return None
    sources = env.SPOOF4 if ":" not in target else env.SPOOF6
    log = os.path.join(work, "flood.log")
    flood = env.Proc(env.NS_C, "1", [bins["flood"], "--target", target, "--port", str(port),
                                     "--sources", sources, "--variant", variant,
                                     "--rate", str(rate), "--count", str(int(rate * seconds) + 1),
                                     "--duration", str(seconds), "--pool", str(pool)], log)
    # the pool (and a replay token) come first: the clock starts when it says "started"
    if not env.wait_text(log, "quicstep-flood: started", flood):
        flood.stop()
        raise RuntimeError(f"quicstep-flood did not start: {log}")
    return flood


def stop_flood(flood):
    if flood is None:
        return {"achieved_pps": 0.0, "sent": 0, "send_errors": 0}
    code, out = flood.stop()
    result = env.last_json(out)
    if code != 0 or result is None:
        raise RuntimeError(f"quicstep-flood failed ({code}): see its log")
    return result


def quic_point(args, bins, work, cert, key, mode, rate, variant="initial"):
    """One measurement: server (+gate) fresh, flood at `rate`, legitimate load; one CSV row."""
    point = os.path.join(work, f"quic-{mode}-{variant}-{rate}")
    # A mode listed again (alternating rounds) gets a fresh directory: a stats file left by
    # the previous round would pass wait_file before this round's server and gate are up.
    round_no = 1
    while os.path.exists(point + ("" if round_no == 1 else f"-r{round_no}")):
        round_no += 1
    point += "" if round_no == 1 else f"-r{round_no}"
    os.makedirs(point)
    stats_file = os.path.join(point, "server.json")
    name = f"fld{os.getpid()}{int(time.time() * 1000) % 100000}"
    extra = []
    if mode == "retry":
        extra = ["--retry"] + (["--master-key", args.master_key] if args.server_has_master_key
                               else [])
    elif mode.startswith("gate"):
        extra = ["--gate", name, "--master-key", args.master_key]
    server = env.Proc(env.NS_S, "0", [bins["server"], "--listen", f"{env.S4}:443", "--cert", cert,
                                      "--key", key, "--workers", "1", "--pin", "--stats-file",
                                      stats_file, "--duration", "90", "--idle-timeout-ms", "3000",
                                      *extra], os.path.join(point, "server.log"), nice=DEFENDER_NICE)
    gate = flood = None
    try:
        if not env.wait_file(stats_file, server):
            raise RuntimeError(f"quicstep-server did not start: {point}/server.log")
        if mode.startswith("gate"):
            gate_cpu = "1" if mode == "gate-cpu1" else "0"
            gate = env.Proc(env.NS_S, gate_cpu, [bins["gate"], "--gate", name, "--listen",
                                                 f"{env.S4}:443", "--master-key", args.master_key,
                                                 "--cpu", gate_cpu, "--stats-file",
                                            os.path.join(point, "gate.json"), "--duration", "90",
                                                 *tx_options(mode)],
                            os.path.join(point, "gate.log"), nice=DEFENDER_NICE)
            if not env.wait_file(os.path.join(point, "gate.json"), gate):
                raise RuntimeError(f"quicstep-gate did not start: {point}/gate.log")
        window = args.seconds
        # Without Retry every distinct DCID is a new connection: never repeat one there.
        pool = 0 if mode == "noretry" else min(32768, int(rate) + 1)
        flood = start_flood(args, bins, point, variant, rate, 1.0 + window + 4, pool)
        time.sleep(0.5 if flood else 0.1)
        for p in (server, gate, flood):
            if p:
                p.mark()
        connections = max(1, int(args.legit_rate * window))
        load_json = os.path.join(point, "load.json")
        load = env.Proc(env.NS_C, "1", [bins["load"], "--server", env.S4, "--local", env.C4,
                                        "--connections", str(connections), "--rate",
                                        str(args.legit_rate), "--size", "1000", "--migration",
                                        "none", "--timeout", str(int(window + 3)), "--json",
                                        load_json], os.path.join(point, "load.log"),
                        nice=DEFENDER_NICE)
        time.sleep(window)
        cpu = {n: (p.cpu_share() if p else 0.0) for n, p in
               (("server", server), ("gate", gate), ("flood", flood))}
        load.proc.wait(timeout=window + 20)
        load.stop()
        flood_result = stop_flood(flood)
        flood = None
    finally:
        if flood:
            flood.stop()
        gate_stats = env.last_json(gate.stop()[1]) if gate else None
        code, out = server.stop()
    stats = env.last_json(out)
    if not os.path.exists(load_json):
        raise RuntimeError(f"quicstep-load wrote no results: {point}/load.log")
    with open(load_json) as f:
        per = json.load(f)["connections"]
    ok = [c["duration_ms"] for c in per if c.get("success")]
    # handshake latency: connection start to handshake completion (quicstep-load's
    # handshake_ms; absent from an older build's JSON)
    hs = [c["handshake_ms"] for c in per if c.get("success") and c.get("handshake_ms", -1) >= 0]
    row = {"mode": mode, "variant": variant, "target_pps": rate,
           "attack_pps": round(flood_result["achieved_pps"], 1),
           "attack_sent": flood_result["sent"],
           "legit_requests": len(per), "legit_ok": len(ok),
           "success_rate": round(len(ok) / max(1, len(per)), 4),
           "latency_ms_p50": round(percentile(ok, 0.5), 2),
           "latency_ms_p99": round(percentile(ok, 0.99), 2),
           "latency_ms_p999": round(percentile(ok, 0.999), 2),
           "handshake_ms_p50": round(percentile(hs, 0.5), 2),
           "handshake_ms_p99": round(percentile(hs, 0.99), 2),
           "handshake_ms_p999": round(percentile(hs, 0.999), 2),
           "cpu_server": round(cpu["server"], 3), "cpu_gate": round(cpu["gate"], 3),
           "cpu_flood": round(cpu["flood"], 3),
           "server_exit": code, "server_alive": code == 0,
           "accepted": sum_workers(stats, "accepted"),
           "handshakes": sum_workers(stats, "handshakes"),
           "retry_sent": sum_workers(stats, "retry_sent") + (gate_stats or {}).get("retry_sent", 0),
           "gate_forwarded": (gate_stats or {}).get("forwarded", 0),
           "rx_packets": sum_workers(stats, "rx_packets")}
    return row


def netstat(ns):
    """TcpExt counters of a namespace (/proc/net/netstat read inside it)."""
    lines = env.netns(ns, "cat", "/proc/net/netstat").stdout.splitlines()
    out = {}
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            out.update(zip(names.split()[1:], map(int, values.split()[1:])))
    return out


def set_tcp_mode(mode):
    env.netns(env.NS_S, "nft", "flush", "ruleset")
    env.netns(env.NS_S, "sysctl", "-qw",
              f"net.ipv4.tcp_syncookies={0 if mode == 'none' else 1}")
    if mode == "synproxy":
        env.netns(env.NS_S, "sysctl", "-qw", "net.ipv4.tcp_timestamps=1")
        env.netns(env.NS_S, "nft", "-f", "-",
                  input=SYNPROXY_RULES.format(wscale=backend_wscale(env.NS_S)))
        env.netns(env.NS_S, "sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_loose=0")


def tcp_point(args, bins, work, cert, key, mode, rate):
    point = os.path.join(work, f"tcp-{mode}-{rate}")
    os.makedirs(point, exist_ok=True)
    set_tcp_mode(mode)
    https = env.Proc(env.NS_S, "0", [bins["https"], "--listen", f"{env.S4}:443", "--cert", cert,
                                     "--key", key, "--duration", "90"],
                     os.path.join(point, "https.log"), nice=DEFENDER_NICE)
    flood = None
    try:
        deadline = time.time() + 5
        while time.time() < deadline and env.netns(env.NS_S, "ss", "-Hltn", "sport = :443",
                                                    check=False).stdout.strip() == "":
            time.sleep(0.05)
        before = netstat(env.NS_S)
        window = args.seconds
        flood = start_flood(args, bins, point, "syn", rate, 1.0 + window + 4)
        time.sleep(0.5 if flood else 0.1)
        for p in (https, flood):
            if p:
                p.mark()
        probe = env.Proc(env.NS_C, "1", [sys.executable, "-m", PROBE, "--server", env.S4,
                                         "--rate", str(args.legit_rate), "--requests",
                                         str(max(1, int(args.legit_rate * window))),
                                         "--timeout", "3"], os.path.join(point, "probe.log"),
                         nice=DEFENDER_NICE, cwd=REPO)
        time.sleep(window)
        cpu = {n: (p.cpu_share() if p else 0.0) for n, p in (("https", https), ("flood", flood))}
        probe.proc.wait(timeout=window + 20)
        _, probe_out = probe.stop()
        flood_result = stop_flood(flood)
        flood = None
        after = netstat(env.NS_S)
    finally:
        if flood:
            flood.stop()
        code, out = https.stop()
        env.netns(env.NS_S, "nft", "flush", "ruleset", check=False)
    result = env.last_json(probe_out)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in
             ("SyncookiesSent", "SyncookiesRecv", "ListenOverflows", "ListenDrops",
              "TCPReqQFullDrop")}
    return {"mode": mode, "target_pps": rate, "attack_pps": round(flood_result["achieved_pps"], 1),
            "attack_sent": flood_result["sent"],
            "legit_requests": result["requests"], "legit_ok": result["succeeded"],
            "success_rate": round(result["succeeded"] / max(1, result["requests"]), 4),
            "latency_ms_p50": round(result["latency_ms_p50"], 2),
            "latency_ms_p99": round(result["latency_ms_p99"], 2),
            "latency_ms_p999": round(result["latency_ms_p999"], 2),
            "cpu_server": round(cpu["https"], 3), "cpu_flood": round(cpu["flood"], 3),
            "server_exit": code, "syncookies_sent": delta["SyncookiesSent"],
            "listen_drops": delta["ListenDrops"], "reqq_full_drops": delta["TCPReqQFullDrop"]}


CAPACITY_MODES = ("retry", "gate", "gate-raw", "gate-packet")
# Counted outside the defender: Initials arriving in the server namespace (prerouting), and
# Retries arriving at the attacker's end of the veth (netdev ingress of qsfl-c), where they
# are dropped: with veth the receiver's processing runs in the sender's context, so a Retry
# routed on into qs-fld-c (and dropped there late, forwarding being off) would charge that
# namespace's IP input to the defender's CPU; a NIC would end the defender's cost at the wire.
CAPACITY_NFT_SERVER = """
table inet qs_fld_capacity {
  counter initials_in {}
  chain in {
    type filter hook prerouting priority raw; policy accept;
    udp dport 443 counter name "initials_in"
  }
}
"""
CAPACITY_NFT_CLIENT = """
table netdev qs_fld_capacity {
  counter retries_out {}
  chain in {
    type filter hook ingress device %s priority 0; policy accept;
    udp sport 443 @th,64,4 == 0xf counter name "retries_out" drop
  }
}
"""


def nft_counters():
    """Packets of the capacity tables' named counters: Initials to port 443 arriving in the
    server namespace; Retries (a v1 long header of type Retry, first octet 0xf_, from port
    443) arriving at the attacker's end of the link."""
    counts = {}
    for ns, family in ((env.NS_S, "inet"), (env.NS_C, "netdev")):
        out = json.loads(env.netns(ns, "nft", "-j", "list", "counters", "table", family,
                                   "qs_fld_capacity").stdout)
        counts.update({c["counter"]["name"]: c["counter"]["packets"] for c in out["nftables"]
                       if "counter" in c})
    return counts


def udp_snmp(ns):
    """Udp counters of a namespace (/proc/net/snmp): RcvbufErrors = datagrams the defender's
    socket had no room for (offered load beyond what it answered)."""
    lines = [l.split() for l in env.netns(ns, "cat", "/proc/net/snmp").stdout.splitlines()
             if l.startswith("Udp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:])))


def read_stats(path):
    """(counters, mtime) of a stats file the server or gate rewrites every second."""
    for _ in range(20):
        try:
            st = os.stat(path)
            with open(path) as f:
                return json.load(f), st.st_mtime
        except (OSError, ValueError):  # mid-rename
            time.sleep(0.02)
    raise RuntimeError(f"unreadable stats file {path}")


def retries_in(mode, stats):
    return (stats.get("retry_sent", 0) if mode.startswith("gate")
            else sum_workers(stats, "retry_sent"))


def peer_mac():
    """The MAC address of the attacker's end of the veth: quicstep-gate --tx packet's next hop."""
    return json.loads(env.netns(env.NS_C, "ip", "-j", "link", "show", env.IF_C).stdout)[0]["address"]


def tx_options(mode):
    if mode == "gate-raw":
        return ["--tx", "raw"]
    if mode == "gate-packet":
        return ["--tx", "packet", "--tx-interface", env.IF_S, "--tx-next-hop", peer_mac()]
    return ["--tx", "udp"]


def capacity_point(args, bins, work, cert, key, mode, quota):
    """One capacity round: the defender (`retry`: quicstep-server's process, one worker doing
    host Retry; `gate`: quicstep-gate; `gate-raw`: quicstep-gate --tx raw) in a cgroup throttled to `quota` of a core and pinned
    to CPU 0, the generator on CPU 1 at full speed (pool of Initials); Retries answered per
    second counted by the defender and by an nft counter on the server namespace's output."""
    point = os.path.join(work, f"capacity-{mode}")
    round_no = 1
    while os.path.exists(point + f"-r{round_no}"):
        round_no += 1
    point += f"-r{round_no}"
    os.makedirs(point)
    stats_file = os.path.join(point, "server.json")
    gate_file = os.path.join(point, "gate.json")
    name = f"fld{os.getpid()}{int(time.time() * 1000) % 100000}"
    is_gate = mode.startswith("gate")
    extra = (["--gate", name, "--master-key", args.master_key] if is_gate
             else ["--retry", "--master-key", args.master_key])
    cg = env.CpuQuota("qs-fld-capacity", quota)
    nft_start = nft_counters()  # totals over the defenders' whole lives: see below
    server = env.Proc(env.NS_S, "0", [bins["server"], "--listen", f"{env.S4}:443", "--cert", cert,
                                      "--key", key, "--workers", "1", "--pin", "--stats-file",
                                      stats_file, "--duration", "60", *extra],
                      os.path.join(point, "server.log"), nice=DEFENDER_NICE)
    gate = flood = None
    try:
        if not env.wait_file(stats_file, server):
            raise RuntimeError(f"quicstep-server did not start: {point}/server.log")
        if is_gate:
            gate = env.Proc(env.NS_S, "0", [bins["gate"], "--gate", name, "--listen",
                                            f"{env.S4}:443", "--master-key", args.master_key,
                                            "--cpu", "0", "--stats-file", gate_file,
                                            "--duration", "60",
                                            *tx_options(mode)],
                            os.path.join(point, "gate.log"), nice=DEFENDER_NICE)
            if not env.wait_file(gate_file, gate):
                raise RuntimeError(f"quicstep-gate did not start: {point}/gate.log")
        defender, defender_file = (gate, gate_file) if is_gate else (server, stats_file)
        cg.add(defender.pid)
        window = args.seconds
        log = os.path.join(point, "flood.log")
        flood = env.Proc(env.NS_C, "1", [bins["flood"], "--target", env.S4, "--port", "443",
                                         "--sources", env.SPOOF4, "--variant", "initial",
                                         "--rate", "0", "--count", "100000000",
                                         "--duration", str(window + 4), "--pool", "32768"], log)
        if not env.wait_text(log, "quicstep-flood: started", flood):
            raise RuntimeError(f"quicstep-flood did not start: {log}")
        time.sleep(min(1.5, window))  # buffers full, throttling in its steady state
        for p in (server, gate, flood):
            if p:
                p.mark()
        t0 = time.monotonic()
        nft0, udp0, thr0 = nft_counters(), udp_snmp(env.NS_S), cg.throttled()
        st0, m0 = read_stats(defender_file)
        time.sleep(window)
        st1, m1 = read_stats(defender_file)
        nft1, udp1, thr1 = nft_counters(), udp_snmp(env.NS_S), cg.throttled()
        elapsed = time.monotonic() - t0
        cpu = {n: (p.cpu_share() if p else 0.0) for n, p in
               (("server", server), ("gate", gate), ("flood", flood))}
        flood_result = stop_flood(flood)
        flood = None
        gate_final = None
        if gate:
            gate_code, gate_out = gate.stop(timeout=30)
            gate = None
            gate_final = env.last_json(gate_out)
            if gate_code != 0 or gate_final is None:
                raise RuntimeError(f"quicstep-gate exited with {gate_code}: {point}/gate.log")
    finally:
        if flood:
            flood.stop()
        if gate:
            gate.stop()
        code, server_out = server.stop(timeout=30)
        cg.remove()
    if code != 0:
        raise RuntimeError(f"quicstep-server exited with {code}: {point}/server.log")
    # Every Retry sent in this round, counted by the defenders themselves (their final
    # counters, written as they exit) and at the attacker's end of the link (read after they
    # exited): the same window on both sides, whatever a throttled defender's stats file
    # showed at the moment of a read.
    nft_end = nft_counters()
    server_final = env.last_json(server_out) or {}
    server_retries = sum_workers(server_final, "retry_sent") if server_final else 0
    own_total = server_retries + ((gate_final or {}).get("retry_sent", 0) if is_gate else 0)
    nft_total = nft_end["retries_out"] - nft_start["retries_out"]
    nft_rate = (nft1["retries_out"] - nft0["retries_out"]) / elapsed
    own_rate = (retries_in(mode, st1) - retries_in(mode, st0)) / max(1e-3, m1 - m0)
    offered = (nft1["initials_in"] - nft0["initials_in"]) / elapsed
    defender_cpu = cpu["gate" if is_gate else "server"]
    periods = thr1[0] - thr0[0]
    return {"mode": mode, "quota": round(cg.share, 3), "window_s": round(elapsed, 2),
            "offered_pps": round(offered, 1), "attack_pps": round(flood_result["achieved_pps"], 1),
            "retries_per_s_nft": round(nft_rate, 1), "retries_per_s_own": round(own_rate, 1),
            "retries_total_nft": nft_total, "retries_total_own": own_total,
            "retries_total_server": server_retries,
            "rcvbuf_errors_per_s": round((udp1.get("RcvbufErrors", 0) -
                                          udp0.get("RcvbufErrors", 0)) / elapsed, 1),
            "cpu_defender": round(defender_cpu, 3), "cpu_server": round(cpu["server"], 3),
            "cpu_gate": round(cpu["gate"], 3), "cpu_flood": round(cpu["flood"], 3),
            "throttled_share": round((thr1[1] - thr0[1]) / periods, 3) if periods else 0.0,
            "per_core_by_quota": round(nft_rate / cg.share, 0),
            "per_core_by_cpu": round(nft_rate / max(defender_cpu, 1e-3), 0)}


def capacity_report(rows, args):
    lines = ["# Retry capacity per core (flood_bench.py --capacity)", "",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
             f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}. Defender throttled to "
             f"{args.quota} of a core (cgroup CPU quota, period "
             f"{env.quota_period_us(args.quota) / 1000:g} ms) and pinned to CPU 0: "
             "`retry` = quicstep-server's process (one worker doing host Retry), `gate` = "
             "quicstep-gate (the worker beside it on CPU 0, unthrottled, sees no flood), "
             "`gate-raw` = quicstep-gate --tx raw (Retries framed by the gate, sent on an "
             "IPPROTO_RAW socket), `gate-packet` = quicstep-gate --tx packet (the same frames "
             "sent on an AF_PACKET socket to the veth peer's MAC, qdisc bypassed, sendmmsg). "
             "Generator on CPU 1 at full speed (a pool of 32,768 encrypted v1 Initials, "
             f"spoofed sources). {args.seconds} s window per round after "
             f"{min(1.5, args.seconds)} s of warm-up; "
             "rounds alternate.", "",
             "Retries/s: `nft` = Retry packets (first octet 0xf_) counted by an nftables "
             "counter where they arrive at the attacker's end of the veth (netdev ingress, "
             "then dropped); `own` = the defender's retry_sent counter. "
             "Per core = nft Retries/s / quota (and / the CPU the defender really used).", "",
             "| round | mode | offered pps | Retries/s (nft) | Retries/s (own) | socket drops/s | "
             "defender CPU | periods throttled | per core (quota) | per core (CPU used) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        lines.append(f"| {i} | {r['mode']} | {r['offered_pps']:.0f} | {r['retries_per_s_nft']:.0f} | "
                     f"{r['retries_per_s_own']:.0f} | {r['rcvbuf_errors_per_s']:.0f} | "
                     f"{r['cpu_defender']} | {100 * r['throttled_share']:.0f}% | "
                     f"{r['per_core_by_quota']:.0f} | {r['per_core_by_cpu']:.0f} |")
    med = {}
    for m in CAPACITY_MODES:
        pts = [r for r in rows if r["mode"] == m]
        if pts:
            med[m] = (median([r["per_core_by_quota"] for r in pts]),
                      median([r["per_core_by_cpu"] for r in pts]), len(pts))
    lines.append("")
    for m, (q, c, n) in med.items():
        lines.append(f"- {m}: median {q:.0f} Retries/s per core by quota, {c:.0f} by CPU used "
                     f"({n} rounds)")
    for g in CAPACITY_MODES[1:]:
        if "retry" in med and g in med and med["retry"][0] > 0:
            lines.append(f"- {g} / host Retry per core: **{med[g][0] / med['retry'][0]:.2f}x** "
                         f"by quota, {med[g][1] / max(med['retry'][1], 1e-9):.2f}x by CPU used "
                         "(target >= 2x)")
    unsaturated = [i + 1 for i, r in enumerate(rows) if r["rcvbuf_errors_per_s"] <= 0]
    if unsaturated:
        lines.append(f"- rounds without socket drops (defender perhaps not saturated): "
                     f"{unsaturated}")
    if args.failed_points:
        lines += ["", "## Rounds that failed", ""] + [f"- {p}" for p in args.failed_points]
    return "\n".join(lines)


def write_master_key(work):
    """A fresh 32-octet token master key (mode 0600) in `work`; returns its path."""
    path = os.path.join(work, "master.key")
    with open(path, "wb") as f:
        f.write(os.urandom(32))
    os.chmod(path, 0o600)
    return path


def run_capacity(args, bins):
    """--capacity: alternating retry/gate rounds, CSV + report in --out."""
    if not bins["gate"]:
        sys.exit("flood_bench: --capacity needs quicstep-gate in the build")
    os.makedirs(args.out, exist_ok=True)
    work = env.tempdir()
    args.master_key = write_master_key(work)
    rows = []
    args.failed_points = []
    env.up()
    try:
        env.netns(env.NS_S, "nft", "-f", "-", input=CAPACITY_NFT_SERVER)
        env.netns(env.NS_C, "nft", "-f", "-", input=CAPACITY_NFT_CLIENT % env.IF_C)
        cert, key = env.make_cert(work)
        modes = [m for m in args.capacity_modes.split(",") if m]
        for m in modes:
            if m not in CAPACITY_MODES:
                raise SystemExit(f"flood_bench: --capacity-modes: unknown mode {m}")
        for i in range(args.capacity_rounds):
            for mode in (modes if i % 2 == 0 else modes[::-1]):
                measure(rows, f"capacity {mode} round {i + 1}", capacity_point, args, bins,
                        work, cert, key, mode, args.quota)
    finally:
        env.down()
        env.rmtree(work)
    write_csv(os.path.join(args.out, "flood_capacity.csv"), rows)
    text = capacity_report(rows, args)
    with open(os.path.join(args.out, "capacity_report.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if args.failed_points:
        sys.exit(1)


def write_csv(path, rows):
    if not rows:
        return
    keys = list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def plot(path, rows, modes, title, latency="latency_ms", latency_label="latency"):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode in modes:
        pts = sorted((r for r in rows if r["mode"] == mode and r.get("variant", "initial")
                      in ("initial", None)), key=lambda r: r["attack_pps"])
        if not pts:
            continue
        color = f"C{modes.index(mode)}"
        x = [max(r["attack_pps"], 1) for r in pts]
        axes[0].plot(x, [100 * r["success_rate"] for r in pts], marker="o", label=mode,
                     color=color)
        for key, style in ((f"{latency}_p50", "-"), (f"{latency}_p99", "--"),
                           (f"{latency}_p999", ":")):
            # none succeeded (nan) or none recorded: no point
            ok = [(xi, r[key]) for xi, r in zip(x, pts) if r[key] > 0]
            axes[1].plot([p[0] for p in ok], [p[1] for p in ok], linestyle=style, marker=".",
                         color=color, label=f"{mode} {key.split('_')[-1]}")
    axes[0].set(xscale="log", xlabel="attack rate (pps, achieved; no flood plotted at 1)",
                ylabel="legitimate success (%)", ylim=(-2, 102), title=title)
    axes[1].set(xscale="log", yscale="log", xlabel="attack rate (pps)",
                ylabel=f"legitimate {latency_label} (ms)",
                title=f"{latency_label} of successful connections")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def survived(rows, mode):
    """Highest achieved attack rate at which success >= 99% and every lower rate also held."""
    best = 0.0
    for r in sorted((r for r in rows if r["mode"] == mode and r.get("variant", "initial")
                     == "initial"), key=lambda r: r["attack_pps"]):
        if r["success_rate"] < SUCCESS_TARGET or not r.get("server_exit", 0) == 0:
            break
        best = r["attack_pps"]
    return best


NOMINAL_CORES = {"noretry": 1, "retry": 1, "gate": 1, "gate-cpu1": 2, "gate-packet": 1}


def report(quic, tcp, args, bins):
    lines = ["# Flood benchmark", "",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"{args.seconds} s per point, legitimate arrivals {args.legit_rate}/s "
             "(quicstep-load, GET /bytes/1000, latency = connection start to last byte). "
             "Pinning: quicstep-server (1 worker) and quicstep-https on CPU 0; `gate`: "
             "quicstep-gate on CPU 0 too (one core for the whole server side, as in the other "
             "modes); `gate-cpu1`: quicstep-gate on CPU 1. Generator and legitimate "
             "client on CPU 1. Server side and legitimate client at nice -10, generator at nice 0. CPU columns: share of one core from /proc/<pid>/stat.", ""]
    if quic:
        lines += ["## QUIC handshake flood (encrypted v1 Initials, spoofed sources)", "",
                  "Latency: handshake = connection start to handshake completion; request = "
                  "connection start to the response's last byte.", "",
                  "| mode | variant | attack pps | success | handshake p50 / p99 / p99.9 ms | "
                  "request p50 / p99 / p99.9 ms | CPU server | CPU gate | CPU flood |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in quic:
            lines.append(f"| {r['mode']} | {r['variant']} | {r['attack_pps']:.0f} | "
                         f"{100 * r['success_rate']:.1f}% | {r['handshake_ms_p50']} / "
                         f"{r['handshake_ms_p99']} / {r['handshake_ms_p999']} | "
                         f"{r['latency_ms_p50']} / {r['latency_ms_p99']} / "
                         f"{r['latency_ms_p999']} | {r['cpu_server']} | "
                         f"{r['cpu_gate']} | {r['cpu_flood']} |")
        top = max((r["attack_pps"] for r in quic), default=0)
        lines += ["", f"Highest attack rate the generator reached: {top:.0f} pps.", "",
                  "Survived = highest achieved attack rate with legitimate success >= 99% at it "
                  "and at every lower rate measured.", ""]
        surv = {m: survived(quic, m) for m in QUIC_MODES + QUIC_EXTRA_MODES
                if any(r["mode"] == m for r in quic)}
        for m, v in surv.items():
            mode_top = max(r["attack_pps"] for r in quic if r["mode"] == m)
            capped = v >= mode_top * 0.95 and mode_top > 0
            lines.append(f"- {m}: survived {v:.0f} pps ({NOMINAL_CORES[m]} core"
                         f"{'s' if NOMINAL_CORES[m] > 1 else ''}; "
                         f"{v / NOMINAL_CORES[m]:.0f} pps per core)"
                         + (" - the highest rate this mode's generator reached: a lower bound"
                            if capped else ""))
        base = surv.get("noretry") or 0
        host = surv.get("retry") or 0
        # no Retry failed already at its lowest flooded rate: that rate bounds it from above
        flooded = sorted(r["attack_pps"] for r in quic if r["mode"] == "noretry"
                         and r["variant"] == "initial" and r["attack_pps"] > 0)
        for g in ("gate", "gate-cpu1", "gate-packet"):
            if g not in surv:
                continue
            if base:
                lines.append(f"- {g} / no Retry: {surv[g] / base:.1f}x (target >= 10x)")
            elif flooded and "noretry" in surv:
                lines.append(f"- {g} / no Retry: > {surv[g] / flooded[0]:.1f}x (no Retry already "
                             f"failed at its lowest flood, {flooded[0]:.0f} pps; target >= 10x)")
            if host:
                per_core = (surv[g] / NOMINAL_CORES[g]) / host
                lines.append(f"- {g} / host Retry per core: {per_core:.2f}x (target >= 2x)")
        if host and base:
            lines.append(f"- host Retry / no Retry: {host / base:.1f}x")
        lines += ["", "Server-side CPU cost per attack packet (CPU of worker + gate over the "
                  "window, less that of the same mode without a flood, divided by the attack "
                  "packets of the window), at each mode's "
                  "highest flooded point that still had >= 99% success, and the rate one core would absorb at that cost "
                  "(an extrapolation, not a measured survival rate):", ""]
        cost = {}
        for m in surv:
            pts = [r for r in quic if r["mode"] == m and r["variant"] == "initial"
                   and r["attack_pps"] > 0]
            if not pts:
                continue
            # where the server still kept up (beyond that, drops in the socket make it cheap)
            held = [r for r in pts if r["success_rate"] >= SUCCESS_TARGET] or pts
            r = max(held, key=lambda r: r["attack_pps"])
            idle = [b for b in quic if b["mode"] == m and b["attack_pps"] == 0]
            base = (idle[0]["cpu_server"] + idle[0]["cpu_gate"]) if idle else 0.0
            cpu = max(0.0, r["cpu_server"] + r["cpu_gate"] - base)  # legitimate load removed
            cost[m] = 1e6 * cpu / r["attack_pps"]
            lines.append(f"- {m}: {cost[m]:.1f} us per packet at {r['attack_pps']:.0f} pps "
                         f"(worker {r['cpu_server']}, gate {r['cpu_gate']} of a core) -> "
                         f"~{1e6 / max(cost[m], 1e-3):.0f} pps per core")
        for g in ("gate", "gate-cpu1", "gate-packet"):
            if g in cost and "retry" in cost:
                if cost[g] > 0 and cost["retry"] > 0:
                    lines.append(f"- {g} vs host Retry, per-core capacity from CPU cost: "
                                 f"{cost['retry'] / cost[g]:.2f}x")
                else:  # 1 tick = 10 ms: a short window at a low rate may show no CPU at all
                    lines.append(f"- {g} vs host Retry: a cost too small to resolve in this "
                                 "window (CPU within the idle share)")
        lines.append("")
        if not any(m.startswith("gate") for m in surv):
            lines.append("- gate: not measured (no quicstep-gate binary in the build)")
        lines.append("")
    if tcp:
        lines += ["## TCP SYN flood against quicstep-https", "",
                  "| mode | attack pps | success | p50 ms | p99 ms | p99.9 ms | CPU server | "
                  "cookies sent | listen drops |", "|---|---|---|---|---|---|---|---|---|"]
        for r in tcp:
            lines.append(f"| {r['mode']} | {r['attack_pps']:.0f} | {100 * r['success_rate']:.1f}% | "
                         f"{r['latency_ms_p50']} | {r['latency_ms_p99']} | {r['latency_ms_p999']} | "
                         f"{r['cpu_server']} | {r['syncookies_sent']} | {r['listen_drops']} |")
        lines.append("")
    if args.failed_points:
        lines += ["## Points that failed", ""] + [f"- {p}" for p in args.failed_points] + [""]
    return "\n".join(lines)


def measure(rows, label, point, args, *rest):
    """Runs one point; a failed point is reported and skipped (the exit code says so)."""
    try:
        rows.append(point(args, *rest))
        print(json.dumps(rows[-1]), flush=True)
    except Exception as e:  # noqa: BLE001 - one broken point must not lose the others
        args.failed_points.append(f"{label}: {e}")
        print(f"flood_bench: point {label} failed: {e}", file=sys.stderr, flush=True)
    time.sleep(args.pause)


def parse_rates(text):
    return [int(float(x)) for x in text.split(",") if x.strip()]


def ensure_matplotlib():
    """Re-executes under Debian's python3 when this interpreter has no matplotlib (a pyenv
    python, say): python3-matplotlib is what scripts/install.sh installs."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
            os.execv(system, [system, "-m", "server_testbed.bench.flood_bench", *sys.argv[1:]])


def main():
    ensure_matplotlib()
    p = argparse.ArgumentParser(description="QUIC handshake and TCP SYN flood benchmark")
    p.add_argument("--build", required=True, help="build directory (RelWithDebInfo for figures)")
    p.add_argument("--out", default="/tmp/qs-flood-bench")
    p.add_argument("--gate-binary", help="quicstep-gate (default: found in --build)")
    p.add_argument("--modes", default=",".join(QUIC_MODES))
    p.add_argument("--tcp-modes", default=",".join(TCP_MODES))
    p.add_argument("--rates", default="0,1000,3000,10000,30000,60000,100000,200000,1000000",
                   help="QUIC attack rates (pps), 0 = no flood")
    p.add_argument("--tcp-rates", default="0,100,1000,10000,50000,100000,1000000")
    p.add_argument("--variants", default="garbage,forged,replay",
                   help="extra QUIC variants, measured once per mode at --variant-rate")
    p.add_argument("--variant-rate", type=int, default=30000)
    p.add_argument("--seconds", type=float, default=3.0, help="measurement window per point")
    p.add_argument("--legit-rate", type=float, default=100, help="legitimate arrivals per second")
    p.add_argument("--pause", type=float, default=1.0, help="idle seconds between points")
    p.add_argument("--quick", action="store_true", help="few points, short windows (smoke)")
    p.add_argument("--no-quic", action="store_true")
    p.add_argument("--no-tcp", action="store_true")
    p.add_argument("--capacity", action="store_true",
                   help="only the per-core Retry capacity: defender throttled to --quota of a "
                        "core, gate and host Retry in alternating rounds")
    p.add_argument("--quota", type=float, default=0.25, help="--capacity: share of one core")
    p.add_argument("--capacity-rounds", type=int, default=3,
                   help="--capacity: rounds per mode")
    p.add_argument("--capacity-modes", default=",".join(CAPACITY_MODES),
                   help="--capacity: modes, in the order of odd rounds (even rounds reverse it)")
    args = p.parse_args()
    if args.quick:
        args.rates, args.tcp_rates, args.variants = "0,2000", "0,2000", "garbage"
        args.variant_rate, args.seconds, args.legit_rate, args.pause = 2000, 1.5, 40, 0.3
    bins = binaries(args.build, args.gate_binary)
    if args.capacity:
        if not 0.01 <= args.quota <= 1.0:
            sys.exit("flood_bench: --quota: a share of one core, 0.01-1")
        return run_capacity(args, bins)
    args.server_has_master_key = "--master-key" in env.sh(bins["server"], "--help",
                                                          check=False).stdout
    modes = [m for m in args.modes.split(",") if m]
    if not bins["gate"] and any(m.startswith("gate") for m in modes):
        print("flood_bench: no quicstep-gate in the build: gate modes skipped", file=sys.stderr)
        modes = [m for m in modes if not m.startswith("gate")]
    os.makedirs(args.out, exist_ok=True)
    work = env.tempdir()
    args.master_key = write_master_key(work)
    quic, tcp = [], []
    args.failed_points = []
    env.up()
    try:
        cert, key = env.make_cert(work)
        if not args.no_quic:
            for mode in modes:
                points = [(rate, "initial") for rate in parse_rates(args.rates)]
                # replay needs a token from a real Retry: not in noretry mode
                points += [(args.variant_rate, v) for v in args.variants.split(",")
                           if v and not (v == "replay" and mode == "noretry")]
                for rate, variant in points:
                    measure(quic, f"{mode} {variant} {rate}", quic_point, args, bins, work, cert,
                            key, mode, rate, variant)
        if not args.no_tcp:
            for mode in [m for m in args.tcp_modes.split(",") if m]:
                for rate in parse_rates(args.tcp_rates):
                    measure(tcp, f"tcp {mode} {rate}", tcp_point, args, bins, work, cert, key,
                            mode, rate)
    finally:
        env.down()
        env.rmtree(work)
    write_csv(os.path.join(args.out, "flood_quic.csv"), quic)
    write_csv(os.path.join(args.out, "flood_tcp.csv"), tcp)
    if quic:
        plot(os.path.join(args.out, "flood_quic.png"), quic, QUIC_MODES + QUIC_EXTRA_MODES,
             "QUIC handshake flood", "handshake_ms", "handshake latency")
    if tcp:
        plot(os.path.join(args.out, "flood_tcp.png"), tcp, TCP_MODES, "TCP SYN flood")
    text = report(quic, tcp, args, bins)
    with open(os.path.join(args.out, "flood_report.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if args.failed_points:
        print("flood_bench: failed points:\n  " + "\n  ".join(args.failed_points),
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
