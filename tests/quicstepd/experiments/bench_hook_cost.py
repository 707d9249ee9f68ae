#!/usr/bin/env python3
"""The per-packet cost of a tc BPF program (behind the clsact qdisc, or attached as a tcx
link) against nftables base chains: what moving quicstepd's inbound counting and its
outbound guard from netfilter hooks to BPF would save a native datagram
(client/results/2026-11-30-native-path-experiments.md). A benchmark for a design decision, not a test:
root; two namespaces of its own (qs-bpfm-a holds the hook, qs-bpfm-b the other end).

    sudo python3 -m tests.quicstepd.experiments.bench_hook_cost [--rounds 8] [--packets 400000]
                                                         [--modes in_none,...] [--json out.json]

Each round installs each mode in turn on qs-bpfm-a's veth (the same order every round),
sends PACKETS 1200-byte datagrams of one flow with udp_blaster, checks that the devices
carried them all and that the mode's counter (nft `counter`, or the BPF program's per-CPU
counter read with bpftool) saw every one, or the run fails, and removes the mode. in_*
modes: qs-bpfm-b sends from port 443 to qs-bpfm-a, whose input chain drops the datagrams
after routing; the veth delivers in the sender's context, so qs-bpfm-b's system time
includes qs-bpfm-a's ingress hooks. out_* modes: qs-bpfm-a sends to port 443 and qs-bpfm-b
drops at its veth's ingress. The figure is the sender's system CPU ns per datagram,
median over rounds, and its paired difference to in_none / out_none of the same round.
The tcx modes need kernel 6.6 or later; without tcx they are skipped with a note. The BPF
programs (hook_cost.bpf.c) and the tcx loader (tcx_attach.c) are compiled into a
temporary directory at start."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tests.quicstepd.experiments import experiment_helpers as x
from tests.quicstepd.experiments.experiment_helpers import run

A, B = "qs-bpfm-a", "qs-bpfm-b"
VA, VB = "qs-bpfm-va", "qs-bpfm-vb"
ADDR_A, ADDR_B = "198.18.252.1", "198.18.252.2"
CLIENT_PORT = 40000
BPFFS = "/sys/fs/bpf"
TCX_PIN = os.path.join(BPFFS, "qs_bpfm_hook_link")
NFT_TABLE = "qs_bpfm"

# The compiled variants of hook_cost.bpf.c (object name: -D flags).
BPF_VARIANTS = {
    "return_only": ["-DHOOK_RETURN_ONLY=1"],
    "in_count": ["-DHOOK_INGRESS=1", "-DHOOK_FLOW_LOOKUP=0"],
    "in_flow": ["-DHOOK_INGRESS=1", "-DHOOK_FLOW_LOOKUP=1"],
    "out_count": ["-DHOOK_INGRESS=0", "-DHOOK_FLOW_LOOKUP=0"],
    "out_flow": ["-DHOOK_INGRESS=0", "-DHOOK_FLOW_LOOKUP=1"],
}


def nft_chain(family, chain, hook, rules):
    return (f"table {family} {NFT_TABLE} {{\n chain {chain} {{\n  {hook}; policy accept;\n"
            + "".join(f"  {r}\n" for r in rules) + " }\n}\n")


PRE = "type filter hook prerouting priority -310"  # before conntrack, as quicstepd's chains
ROUTE_OUT = "type route hook output priority -310"
NETDEV_IN = f"type filter hook ingress device {VA} priority 0"

# mode: (kind, what). kind none: nothing but the sinks; nft: a ruleset (family, text);
# clsact: the qdisc alone; tc: the clsact qdisc and a `bpf da` filter; tcx: a tcx link.
# The tc/tcx objects: BPF_VARIANTS.
MODES = {
    "in_none": ("none", None),
    "in_nft_pre_empty": ("nft", ("inet", nft_chain("inet", "pre", PRE, []))),
    "in_nft_pre": ("nft", ("inet", nft_chain("inet", "pre", PRE, ["udp sport 443 counter"]))),
    # quicstepd's prerouting chain first lets the channel's packets pass by interface name
    "in_nft_pre_iif": ("nft", ("inet", nft_chain("inet", "pre", PRE, [
        'iifname "qs-x" return', "udp sport 443 counter"]))),
    "in_nft_netdev": ("nft", ("netdev", nft_chain("netdev", "in", NETDEV_IN,
                                                  ["udp sport 443 counter"]))),
    "in_clsact_only": ("clsact", None),
    "in_tc_ret": ("tc", "return_only"),
    "in_tc_count": ("tc", "in_count"),
    "in_tc_hash": ("tc", "in_flow"),
    "in_tcx_ret": ("tcx", "return_only"),
    "in_tcx_count": ("tcx", "in_count"),
    "in_tcx_hash": ("tcx", "in_flow"),
    "out_none": ("none", None),
    "out_nft_route_empty": ("nft", ("inet", nft_chain("inet", "out", ROUTE_OUT, []))),
    "out_nft_route": ("nft", ("inet", nft_chain("inet", "out", ROUTE_OUT,
                                                ["udp dport 443 counter"]))),
    "out_clsact_only": ("clsact", None),
    "out_tc_ret": ("tc", "return_only"),
    "out_tc_count": ("tc", "out_count"),
    "out_tc_hash": ("tc", "out_flow"),
    "out_tcx_ret": ("tcx", "return_only"),
    "out_tcx_count": ("tcx", "out_count"),
    "out_tcx_hash": ("tcx", "out_flow"),
}

# Always present, the same in every mode, so that only the mode differs: qs-bpfm-a drops
# what it receives after routing (no socket, no ICMP errors), qs-bpfm-b drops at its veth's
# ingress. (So the netfilter ingress hook's static key is on in every mode, none included.)
SINK_A = ("table inet qs_bpfm_sink {\n chain in {\n  type filter hook input priority 0; "
          "policy drop;\n }\n}\n")
SINK_B = (f"table netdev qs_bpfm_sink {{\n chain in {{\n  type filter hook ingress device "
          f"{VB} priority 0; policy drop;\n }}\n}}\n")


def direction(mode):
    return "ingress" if mode.startswith("in_") else "egress"


def setup():
    teardown()
    for ns in (A, B):
        run("ip", "netns", "add", ns)
        run("ip", "link", "set", "lo", "up", ns=ns)
    run("ip", "link", "add", VA, "netns", A, "type", "veth", "peer", "name", VB, "netns", B)
    for ns, dev, addr in ((A, VA, ADDR_A), (B, VB, ADDR_B)):
        run("ip", "addr", "add", addr + "/30", "dev", dev, ns=ns)
        run("ip", "link", "set", dev, "up", ns=ns)
    # Permanent neighbours: no ARP traffic or resolution delay in a measurement.
    mac_a = run("cat", f"/sys/class/net/{VA}/address", ns=A).strip()
    mac_b = run("cat", f"/sys/class/net/{VB}/address", ns=B).strip()
    run("ip", "neigh", "replace", ADDR_B, "lladdr", mac_b, "dev", VA, "nud", "permanent", ns=A)
    run("ip", "neigh", "replace", ADDR_A, "lladdr", mac_a, "dev", VB, "nud", "permanent", ns=B)
    run("nft", "-f", "-", ns=A, stdin=SINK_A)
    run("nft", "-f", "-", ns=B, stdin=SINK_B)


def teardown():
    # The link pin keeps the program attached (to a device that goes away with the
    # namespace) and on the bpffs: remove it first.
    if os.path.lexists(TCX_PIN):
        os.unlink(TCX_PIN)
    for ns in (A, B):
        run("ip", "netns", "del", ns, check=False)


def bpffs_mounted():
    with open("/proc/mounts") as f:
        return any(line.split()[1:3] == [BPFFS, "bpf"] for line in f)


def tcx_available(tcx_attach, objects):
    """Whether the kernel can attach a tcx link (6.6 or later): one attached and removed."""
    if not bpffs_mounted():
        return False, f"no bpffs at {BPFFS} to pin the tcx link on"
    r = subprocess.run([tcx_attach, f"/run/netns/{A}", VA, "ingress",
                        objects["return_only"], TCX_PIN], capture_output=True, text=True)
    if os.path.lexists(TCX_PIN):
        os.unlink(TCX_PIN)
    if r.returncode == 3:
        return False, f"kernel {os.uname().release} has no tcx (needs 6.6): {r.stderr.strip()}"
    if r.returncode != 0:
        raise RuntimeError(f"tcx_attach: {r.stderr.strip()}")
    return True, ""


def program_maps(prog_id):
    """name -> map id of the maps the program uses."""
    info = json.loads(run("bpftool", "-j", "prog", "show", "id", str(prog_id)))
    maps = {}
    for map_id in info.get("map_ids", []):
        m = json.loads(run("bpftool", "-j", "map", "show", "id", str(map_id)))
        maps[m["name"]] = map_id
    return maps


def tc_program_id(dev_direction):
    for f in json.loads(run("tc", "-j", "filter", "show", "dev", VA, dev_direction, ns=A)):
        prog = f.get("options", {}).get("prog")
        if prog:
            return prog["id"]
    raise RuntimeError(f"no bpf filter on {VA} {dev_direction}")


def flow_key_hex():
    """hc_flow_key of the outbound flow, as bpftool takes it: addresses and ports in
    network byte order."""
    octets = [int(o) for a in (ADDR_A, ADDR_B) for o in a.split(".")]
    for port in (CLIENT_PORT, 443):
        octets += [port >> 8, port & 0xff]
    return [f"{o:02x}" for o in octets]


def mode_up(mode, tools):
    """Installs mode on qs-bpfm-a; returns the BPF program's maps (name -> id), if any."""
    kind, what = MODES[mode]
    if kind == "nft":
        run("nft", "-f", "-", ns=A, stdin=what[1])
        return {}
    if kind in ("clsact", "tc"):
        run("tc", "qdisc", "add", "dev", VA, "clsact", ns=A)
        if kind == "clsact":
            return {}
        run("tc", "filter", "add", "dev", VA, direction(mode), "bpf", "da", "obj",
            tools["objects"][what], "sec", "tc", ns=A)
        prog_id = tc_program_id(direction(mode))
    elif kind == "tcx":
        prog_id = int(run(tools["tcx_attach"], f"/run/netns/{A}", VA, direction(mode),
                          tools["objects"][what], TCX_PIN).strip())
    else:
        return {}
    maps = program_maps(prog_id)
    if "hc_flows" in maps and mode.startswith("out_"):  # the decided flow is in the map
        run("bpftool", "map", "update", "id", str(maps["hc_flows"]), "key", "hex",
            *flow_key_hex(), "value", "hex", "01", "00", "00", "00")
    return maps


def percpu_packets(map_id, index):
    """The packets field of hc_counters[index], summed over CPUs."""
    key = [f"{b:02x}" for b in index.to_bytes(4, "little")]
    out = json.loads(run("bpftool", "-j", "map", "lookup", "id", str(map_id), "key", "hex", *key))
    total = 0
    for per_cpu in out["values"]:
        value = per_cpu["value"]
        if isinstance(value, dict):  # with BTF: the struct's fields
            total += value["packets"]
        else:  # without: raw octets, packets first
            total += int.from_bytes(bytes(int(b, 16) for b in value[:8]), "little")
    return total


def counted_and_down(mode, maps):
    """The packets the mode's counter saw (None: the mode counts nothing), and for an
    outbound flow lookup the hits too; then removes the mode."""
    kind, what = MODES[mode]
    seen, hits = None, None
    if kind == "nft":
        out = run("nft", "list", "table", what[0], NFT_TABLE, ns=A)
        if "counter packets" in out:
            seen = sum(int(line.split("counter packets")[1].split()[0])
                       for line in out.splitlines() if "counter packets" in line)
        run("nft", "delete", "table", what[0], NFT_TABLE, ns=A)
    elif kind in ("tc", "tcx"):
        if "hc_counters" in maps:
            seen = percpu_packets(maps["hc_counters"], 0)
            if "hc_flows" in maps and mode.startswith("out_"):
                hits = percpu_packets(maps["hc_counters"], 1)
        if kind == "tcx":
            os.unlink(TCX_PIN)
    if kind in ("clsact", "tc"):
        run("tc", "qdisc", "del", "dev", VA, "clsact", ns=A)
    return seen, hits


def device_counts():
    return {"va_tx": x.device_packets(A, VA, "tx_packets"),
            "va_rx": x.device_packets(A, VA, "rx_packets"),
            "vb_tx": x.device_packets(B, VB, "tx_packets"),
            "vb_rx": x.device_packets(B, VB, "rx_packets")}


def blast(mode, packets, blaster):
    """Sends packets datagrams of the mode's direction; returns (sys ns, wall ns, failed
    sendmmsg calls) per udp_blaster's line."""
    if mode.startswith("in_"):  # qs-bpfm-b is the server (port 443)
        out = run(blaster, ADDR_A, str(packets), "443", str(CLIENT_PORT), ns=B)
    else:
        out = run(blaster, ADDR_B, str(packets), str(CLIENT_PORT), "443", ns=A)
    sys_ns, wall_ns, failed = out.split()
    return float(sys_ns), float(wall_ns), int(failed)


def check_round(mode, packets, before, after, seen, hits):
    """Fails the run unless the datagrams took the expected devices and the mode's counter
    saw them all."""
    d = {k: after[k] - before[k] for k in before}
    sent, received = ("vb_tx", "va_rx") if mode.startswith("in_") else ("va_tx", "vb_rx")
    if d[sent] < packets or d[received] < packets:
        raise RuntimeError(f"{mode}: {packets} datagrams sent, devices counted {d}")
    if seen is not None and seen < packets:
        raise RuntimeError(f"{mode}: the hook counted {seen} of {packets} datagrams")
    if hits is not None and hits < packets:
        raise RuntimeError(f"{mode}: {hits} of {packets} datagrams found in the flow map")


def build_tools(tmp):
    cflags = ["-target", "bpf", "-g", "-Werror", *x.multiarch_include()]
    objects = {name: x.compile_c("clang", "hook_cost.bpf.c", os.path.join(tmp, name + ".o"),
                                 [*cflags, *flags, "-c"])
               for name, flags in BPF_VARIANTS.items()}
    tcx_attach = x.compile_c("cc", "tcx_attach.c", os.path.join(tmp, "tcx_attach"),
                             ["-Werror"], ["-lbpf"])
    return {"objects": objects, "tcx_attach": tcx_attach}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--packets", type=int, default=400000)
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--json", help="write every round's figures and the medians here")
    args = ap.parse_args()
    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m}")
    x.require_root_and_tools(["ip", "nft", "tc", "bpftool", "clang", "cc"])
    blaster = x.find_udp_blaster()

    sys_ns = {m: [] for m in modes}
    wall_ns = {m: [] for m in modes}
    notes = []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="qs-bpfm-") as tmp:
        tools = build_tools(tmp)
        try:
            setup()
            if any(MODES[m][0] == "tcx" for m in modes):
                ok, why = tcx_available(tools["tcx_attach"], tools["objects"])
                if not ok:
                    notes.append(f"tcx modes skipped: {why}")
                    print(notes[-1], flush=True)
                    modes = [m for m in modes if MODES[m][0] != "tcx"]
                    sys_ns = {m: sys_ns[m] for m in modes}
                    wall_ns = {m: wall_ns[m] for m in modes}
            # One untimed send each way: first-use costs stay out of the first round.
            blast("in_none", args.packets // 4, blaster)
            blast("out_none", args.packets // 4, blaster)
            for r in range(args.rounds):
                for m in modes:
                    maps = mode_up(m, tools)
                    before = device_counts()
                    s, w, failed = blast(m, args.packets, blaster)
                    after = device_counts()
                    seen, hits = counted_and_down(m, maps)
                    check_round(m, args.packets, before, after, seen, hits)
                    if failed:
                        print(f"warning: {m}: {failed} failed sendmmsg calls", flush=True)
                    sys_ns[m].append(s)
                    wall_ns[m].append(w)
                print(f"round {r + 1}/{args.rounds}: " + "  ".join(
                    f"{m} {sys_ns[m][-1]:.0f}" for m in modes), flush=True)
        finally:
            teardown()
    print(f"elapsed {time.time() - started:.0f} s; kernel {os.uname().release}")
    for note in notes:
        print(note)
    res = x.print_table(
        f"system CPU ns per datagram sent (in_*: sent to the hooked namespace), median of "
        f"{args.rounds} rounds of {args.packets}; paired d: against in_none / out_none of "
        "the same round", sys_ns, wall_ns,
        lambda m: "in_none" if m.startswith("in_") else "out_none")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sys": sys_ns, "wall": wall_ns, "summary": res, "notes": notes,
                       "rounds": args.rounds, "packets": args.packets,
                       "kernel": os.uname().release}, f, indent=2)


if __name__ == "__main__":
    main()
