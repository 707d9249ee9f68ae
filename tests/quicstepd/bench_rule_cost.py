#!/usr/bin/env python3
"""The kernel's cost per native packet of quicstepd's rules, side by side with the paper's
rules (rules/paper_rules.sh) and with no rules: a CPU-bound sender (a bulk upload) pays it
on every datagram, and on every answer it receives (an upload's ACKs). A benchmark, not a
test: root; two namespaces of its own (qs-rc-a holds the rules, qs-rc-b the other end), no
lab needed.

    sudo python3 -m tests.quicstepd.bench_rule_cost [--rounds 8] [--packets 400000] [--ipv6]
                                            [--inbound | --unconnected] [--json out.json]

Each round installs each mode in turn and sends PACKETS 1200-byte short-header datagrams
of one flow with udp_blaster (sendmmsg on a connected socket; with --unconnected each
datagram is addressed on an unconnected socket, so that each pays a route lookup and the
rules' walk); the figure is the sender's system CPU time per datagram, median over rounds.
Outbound (the default) qs-rc-a sends and qs-rc-b drops at its veth's ingress; in the
quicstepd mode the flow is in the native set, as a decided flow's is, and the native_out
counters must show every datagram, or the run fails: the bulk rule's, and quic_out's for
the sampled datagrams that refresh the flow's element (udp_blaster varies the sampled byte
as ciphertext would; the share is reported, and none refreshed fails the run). With
--inbound qs-rc-b sends the server's side of the flow (from port 443) and qs-rc-a receives
it (an input chain drops it after routing, in every mode); the veth delivers in the
sender's context, so its system time includes qs-rc-a's prerouting; the native_in counter
must show every datagram. quicstepd's inbound queue rules (reached only by a watched flow's
packets) are not installed here."""
import argparse
import json
import os
import statistics
import subprocess

from qs_support import binaries
from tests.quicstepd import qsd_helpers as h

A, B = "qs-rc-a", "qs-rc-b"
SRC, DST, SPORT = "198.18.250.1", "198.18.250.2", 40000
SRC6, DST6 = "2001:db8:250::1", "2001:db8:250::2"
CHANNEL, TUNNEL = "qs-rc-ch", "198.18.251.2"
PAPER_RULES = os.path.join(h.REPO, "rules", "paper_rules.sh")
BLASTER = binaries.path("udp_blaster")
PRINT_RULESET = binaries.path("print_ruleset")
GUARD_TOOL = binaries.path("native_guard_tool")
GUARD_PINS = "/sys/fs/bpf/qs-rc-guard"


def run(*cmd, ns=None, stdin=None, check=True):
    full = ["ip", "netns", "exec", ns, *cmd] if ns else list(cmd)
    r = subprocess.run(full, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {r.stderr.strip()}")
    return r.stdout


def setup():
    teardown()
    for ns in (A, B):
        run("ip", "netns", "add", ns)
        run("ip", "link", "set", "lo", "up", ns=ns)
    run("ip", "link", "add", "qs-rc-va", "netns", A, "type", "veth", "peer", "name", "qs-rc-vb",
        "netns", B)
    for ns, dev, v4, v6 in ((A, "qs-rc-va", SRC, SRC6), (B, "qs-rc-vb", DST, DST6)):
        run("ip", "addr", "add", v4 + "/30", "dev", dev, ns=ns)
        run("ip", "addr", "add", v6 + "/64", "dev", dev, "nodad", ns=ns)
        run("ip", "link", "set", dev, "up", ns=ns)
    # The receiver drops everything at once; the sender needs no neighbour resolution.
    run("nft", "-f", "-", ns=B, stdin="table netdev sink {\n chain in {\n  type filter hook "
        "ingress device qs-rc-vb priority 0; policy drop;\n }\n}\n")
    mac = run("cat", "/sys/class/net/qs-rc-vb/address", ns=B).strip()
    for addr in (DST, DST6):
        run("ip", "neigh", "replace", addr, "lladdr", mac, "dev", "qs-rc-va", "nud", "permanent",
            ns=A)
    mac_a = run("cat", "/sys/class/net/qs-rc-va/address", ns=A).strip()
    for addr in (SRC, SRC6):
        run("ip", "neigh", "replace", addr, "lladdr", mac_a, "dev", "qs-rc-vb", "nud",
            "permanent", ns=B)
    # A stand-in for the WireGuard device (the stateless rules bind chains to it).
    run("ip", "tuntap", "add", CHANNEL, "mode", "tun", ns=A)
    run("ip", "addr", "add", TUNNEL + "/32", "dev", CHANNEL, ns=A)
    run("ip", "link", "set", CHANNEL, "up", ns=A)


def teardown():
    for ns in (A, B):
        run("ip", "netns", "del", ns, check=False)


def printed_rules(mode, kind):
    """(nft text, iptables-restore text, ip rule commands) that print_ruleset prints for
    `kind`; MODE=PATH names another build's print_ruleset."""
    printer = mode.split("=", 1)[1] if "=" in mode else PRINT_RULESET
    nft, _, rest = run(printer, CHANNEL, TUNNEL, kind).partition("#iptables\n")
    ipt, _, rules = rest.partition("#routing\n")
    return nft, ipt, rules


def mode_up(mode, v6):
    run("nft", "flush", "ruleset", ns=A)
    if mode == "guard":
        run(GUARD_TOOL, "--netns", A, "--pin-dir", GUARD_PINS, "attach", "qs-rc-va")
    elif mode == "paper":
        run(PAPER_RULES, "up", CHANNEL, "51820", ns=A)
    elif mode.startswith("routed"):
        # The routed path's tables and rules; the flow moved native (its routed4/6 element),
        # the guard on the native device as the daemon attaches it (main() checks that every
        # datagram left natively: a packet of a flow not moved is marked and re-routed into
        # the channel's stand-in).
        nft, _, rules = printed_rules(mode, "routed")
        run("nft", "-f", "-", ns=A, stdin=nft)
        for fam, src in (("-4", SRC), ("-6", SRC6)):
            run("ip", fam, "route", "replace", "default", "dev", CHANNEL, "src", src, "table",
                "51821", ns=A)
        for line in rules.splitlines():
            if line:
                run(*line.split(), ns=A)
        src, dst = (SRC6, DST6) if v6 else (SRC, DST)
        run("nft", "add", "element", "inet", "quicstep", "routed" + ("6" if v6 else "4"),
            f"{{ {dst} . {SPORT} . 443 }}", ns=A)
        if mode.startswith("routed+guard"):
            run(GUARD_TOOL, "--netns", A, "--pin-dir", GUARD_PINS, "attach", "qs-rc-va")
    elif mode.startswith("quicstepd"):
        nft, ipt, _ = printed_rules(mode, "stateless")
        run("nft", "-f", "-", ns=A, stdin=nft)
        run("iptables-nft-restore", "--noflush", ns=A, stdin=ipt)
        run("ip6tables-nft-restore", "--noflush", ns=A, stdin=ipt)
        fam, src, dst = ("6", SRC6, DST6) if v6 else ("4", SRC, DST)
        run("nft", "add", "element", "inet", "quicstep", "native" + fam,
            f"{{ {src} . {SPORT} . {dst} . 443 timeout 3600s }}", ns=A)


def mode_down(mode):
    if mode == "guard" or mode.startswith("routed+guard"):
        run(GUARD_TOOL, "--netns", A, "--pin-dir", GUARD_PINS, "remove", "qs-rc-va")
    if mode.startswith("routed"):
        for fam in ("-4", "-6"):
            for p in range(10120, 10134):  # the routed path's priorities (routing.hpp)
                for _ in range(8):  # at most a few rules per priority
                    if subprocess.run(["ip", "netns", "exec", A, "ip", fam, "rule", "del",
                                       "priority", str(p)], capture_output=True).returncode:
                        break
            run("ip", fam, "route", "flush", "table", "51821", ns=A, check=False)
    if mode == "paper":
        run(PAPER_RULES, "down", ns=A)
    run("nft", "flush", "ruleset", ns=A)  # iptables-nft's tables are nft tables too


def native_tx():
    """Packets the native device of the rules' namespace has sent."""
    return int(run("cat", "/sys/class/net/qs-rc-va/statistics/tx_packets", ns=A))


# Inbound: what reaches qs-rc-a is dropped after routing (no socket, no ICMP errors).
INPUT_SINK = ("table inet qs_rc_sink {\n chain in {\n  type filter hook input priority 0; "
              "policy drop;\n }\n}\n")


def counted(chain, comment):
    """Packets counted by quicstepd's rules whose comment is `comment`, in `chain` (the bulk
    rule in out_decide: native_out) or, if None, the whole table (inbound: native_in)."""
    where = ["chain", "inet", "quicstep", chain] if chain else ["table", "inet", "quicstep"]
    out = run("nft", "list", *where, ns=A)
    total = 0
    for line in out.splitlines():
        if f'comment "{comment}"' in line and "counter packets" in line:
            total += int(line.split("counter packets")[1].split()[0])
    return total


def guard_counted(slot):
    """Packets the native-path guard (client/kernel/native_guard) counted in `slot`."""
    return json.loads(run(GUARD_TOOL, "--pin-dir", GUARD_PINS, "counters"))[slot]["packets"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--packets", type=int, default=400000)
    ap.add_argument("--ipv6", action="store_true", help="send over IPv6 instead of IPv4")
    ap.add_argument("--inbound", action="store_true",
                    help="the rules' cost per received datagram (the server's side sends)")
    ap.add_argument("--unconnected", action="store_true",
                    help="send from an unconnected socket (a route lookup per datagram)")
    ap.add_argument("--modes", default="none,paper,quicstepd",
                    help="comma-separated: none, paper, quicstepd (the queue path's rules), "
                         "routed (the routed path's nft table and ip rules, the flow moved), "
                         "routed+guard (and the guard), quicstepd=/routed=/routed+guard="
                         "PRINT_RULESET (another build's print_ruleset), and guard (the "
                         "native-path guard's tc programs, client/kernel/native_guard, alone)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.inbound and args.unconnected:
        ap.error("--unconnected is a sender's choice: not with --inbound")
    modes = args.modes.split(",")
    for m in modes:
        if (m not in ("none", "paper", "quicstepd", "guard", "routed", "routed+guard") and
                not m.startswith(("quicstepd=", "routed=", "routed+guard="))):
            ap.error(f"unknown mode {m}")
    ns_per_packet = {m: [] for m in modes}
    bulk_share = {m: [] for m in modes if m.startswith("quicstepd")}
    setup()
    try:
        for r in range(args.rounds):
            for m in modes:
                mode_up(m, args.ipv6)
                if args.inbound:
                    run("nft", "-f", "-", ns=A, stdin=INPUT_SINK)
                    out = run(BLASTER, SRC6 if args.ipv6 else SRC, str(args.packets), "443",
                              str(SPORT), ns=B)
                    where = (None, "native_in")
                else:
                    tx = native_tx()
                    out = run(BLASTER, *(["--unconnected"] if args.unconnected else []),
                              DST6 if args.ipv6 else DST, str(args.packets), str(SPORT), ns=A)
                    where = (None, "native_out")
                    if m.startswith("routed") and native_tx() - tx < args.packets:
                        raise RuntimeError(f"{m}: {native_tx() - tx} of {args.packets} "
                                           "datagrams left natively (the element missed)")
                if m == "guard":  # the tc programs of the redesign (client/kernel/native_guard)
                    seen = guard_counted(where[1])
                    if seen < args.packets:
                        raise RuntimeError(f"the guard counted {seen} of {args.packets} "
                                           f"datagrams as {where[1]}")
                if m.startswith("quicstepd"):
                    total = counted(*where)
                    if total < args.packets:
                        raise RuntimeError(f"the flow did not take the {where[1]} rules "
                                           f"({total} of {args.packets} counted)")
                    if not args.inbound:  # the rest refreshed the flow's element in quic_out
                        bulk = counted("out_decide", "native_out")
                        if bulk >= total:
                            raise RuntimeError("no datagram refreshed the flow's element "
                                               "in quic_out (the sample never matched)")
                        bulk_share[m].append(bulk / total)
                mode_down(m)
                ns_per_packet[m].append(float(out.split()[0]))
            print(f"round {r + 1}/{args.rounds}: " + "  ".join(
                f"{m} {ns_per_packet[m][-1]:.0f}" for m in modes), flush=True)
    finally:
        teardown()
    med = {m: statistics.median(v) for m, v in ns_per_packet.items()}
    print(f"system CPU ns per {'IPv6' if args.ipv6 else 'IPv4'} datagram "
          f"{'received' if args.inbound else 'sent'}"
          f"{' (unconnected socket)' if args.unconnected else ''}, median of "
          f"{args.rounds} rounds of {args.packets}:")
    for m in modes:
        extra = f"  (+{med[m] - med['none']:.0f} ns over none)" if "none" in med else ""
        print(f"  {m[:40]:40s} {med[m]:7.0f}{extra}")
    for m, shares in bulk_share.items():
        if shares:
            print(f"  {m[:40]:40s} bulk rule took {statistics.median(shares):.1%} of the "
                  "datagrams (the rest refreshed the flow's element in quic_out)")
    if "paper" in med and "quicstepd" in med and "none" in med:
        p, q = med["paper"] - med["none"], med["quicstepd"] - med["none"]
        print(f"quicstepd's rules cost a native packet {q - p:+.0f} ns more than the paper's")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ns_per_packet": ns_per_packet, "median": med, "bulk_share": bulk_share,
                       "packets": args.packets,
                       "ipv6": args.ipv6, "inbound": args.inbound,
                       "unconnected": args.unconnected}, f, indent=2)


if __name__ == "__main__":
    main()
