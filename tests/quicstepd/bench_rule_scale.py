#!/usr/bin/env python3
"""How the routed native path's per-flow rules scale with the number of native flows (issue
25, "Scale"), side by side with one alternative. A benchmark, not a test: root; one
namespace of its own (qs-rscale), no lab needed.

    sudo python3 -m tests.quicstepd.bench_rule_scale [--flows 0,1000,10000] [--rounds 2]

The routed path gives each flow it moves native a rule of its own, `to SERVER ipproto udp
sport P dport Q lookup main` at one priority (client/daemon/routed_path.hpp). The kernel
walks policy rules one by one on every route lookup, and an unconnected UDP socket (Debian's
ngtcp2 client, many servers) looks a route up on every datagram; a change of the rules also
invalidates every socket's cached route. Modes:
  rules  N such rules (the routed path as it is);
  set    one rule `fwmark 0x52 lookup main` and N flows in an nftables set that a `type route`
         output chain matches to set that mark (one hash lookup per packet, whatever N).
The figure: microseconds per sendto() of a 1,200-byte datagram from an unconnected socket to
an address none of the N flows names (so every rule is walked), from Python (its own
overhead, ~1-2 us, is in every mode alike); best of --rounds, modes interleaved."""
import argparse
import subprocess
import sys

NS = "qs-rscale"
SEND = ("import socket,time\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        "s.bind(('198.18.250.1',40000))\n"
        "b=bytes(1200);n={n}\n"
        "t=time.perf_counter()\n"
        "for i in range(n): s.sendto(b,('198.18.251.7',443))\n"
        "print((time.perf_counter()-t)/n*1e6)\n")


def run(*argv, stdin=None):
    return subprocess.run(["ip", "netns", "exec", NS, *argv], input=stdin, text=True,
                          check=True, capture_output=True).stdout


def flow(i):
    """The i-th native flow: (server address, client port)."""
    return f"198.18.{100 + i // 250}.{1 + i % 250}", 20000 + i % 40000


def install(mode, n):
    if mode == "rules":
        if n:
            run("ip", "-batch", "-", stdin="".join(
                f"rule add pref 10120 to {a} ipproto udp sport {p} dport 443 lookup main\n"
                for a, p in map(flow, range(n))))
        return
    run("ip", "rule", "add", "pref", "10120", "fwmark", "0x52", "lookup", "main")
    table = ("table inet qs_rscale {\n"
             "  set flows4 { type ipv4_addr . inet_service . inet_service; size 65536; }\n"
             "  chain out { type route hook output priority mangle; policy accept;\n"
             "    meta l4proto udp ip daddr . udp sport . udp dport @flows4 meta mark set 0x52\n  }\n"
             "}\n")
    run("nft", "-f", "-", stdin=table)
    for start in range(0, n, 2000):
        chunk = ", ".join(f"{a} . {p} . 443" for a, p in map(flow, range(start, min(n, start + 2000))))
        run("nft", "-f", "-", stdin=f"add element inet qs_rscale flows4 {{ {chunk} }}\n")


def remove(mode, n):
    if mode == "rules":
        if n:
            run("ip", "-batch", "-", stdin="rule del pref 10120\n" * n)
        return
    run("ip", "rule", "del", "pref", "10120")
    run("nft", "delete", "table", "inet", "qs_rscale")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", default="0,1000,10000")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sends", type=int, default=50000)
    args = ap.parse_args()
    flows = [int(x) for x in args.flows.split(",")]
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "netns", "add", NS], check=True)
    best = {}
    try:
        # A veth pair inside the namespace: the datagrams leave d0 and die at d1.
        for argv in (["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"],
                     ["ip", "link", "set", "d0", "up"], ["ip", "link", "set", "d1", "up"],
                     ["ip", "addr", "add", "198.18.250.1/24", "dev", "d0"],
                     ["ip", "route", "add", "default", "dev", "d0"]):
            run(*argv)
        for rnd in range(args.rounds):
            for n in flows:
                for mode in ("rules", "set"):
                    install(mode, n)
                    try:
                        us = float(run(sys.executable, "-c", SEND.format(n=args.sends)))
                    finally:
                        remove(mode, n)
                    best[mode, n] = min(us, best.get((mode, n), us))
                    print(f"round {rnd}: {mode:5s} {n:6d} flows: {us:8.2f} us per sendto",
                          flush=True)
    finally:
        subprocess.run(["ip", "netns", "del", NS])
    base = min(best["rules", flows[0]], best["set", flows[0]])
    print("\n| native flows | per-flow rules (us/sendto) | nft set + one rule | rules / set |")
    print("|---|---|---|---|")
    for n in flows:
        r, s = best["rules", n], best["set", n]
        print(f"| {n:,} | {r:.2f} ({r / base:.1f}x) | {s:.2f} ({s / base:.1f}x) | {r / s:.1f} |")


if __name__ == "__main__":
    main()
