#!/usr/bin/env python3
"""Many QUIC flows through the routed native path (issue 25, "Scale"): --flows concurrent
flows opened at --rate new flows per second, then --churn seconds in which --rate flows a
second close and as many new ones open; each flow sends a few short headers at once after
its handshake, then one every --interval seconds. A benchmark, not a test: root; two namespaces of its own (qs-fscale-c,
qs-fscale-s), no lab needed.

    sudo python3 -m tests.quicstepd.bench_flow_scale [--flows 10000] [--rate 1000] [--churn 30]

The client namespace runs quicstepd (the build's, routed path, default policy) with a veth
as its channel (channel_kind = "interface": the channel's far end is the server namespace
itself) and a second veth as its native link. A driver there plays the clients: per flow a
UDP socket to one of 250 servers, an Initial (long header) through the channel, and on the
server's Initial back a Handshake and then short headers. A responder in the server
namespace answers every datagram (an Initial with an Initial, a short header with a short
header) and tells by the source address whether a client's short header came through the
channel (the tunnel address) or natively: a flow counts as moved when its short headers
arrive natively. Reported each second and at the end: flows open, moved, the daemon's
decisions (classified packets) per second, its flows tracked and flow elements, memory and
descriptors, copies lost; at the end the flows that never moved, and the daemon's elements
against the flows still open (a closed flow's element must go: no leak)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from qs_support import binaries, netns, procs
from qs_support.quicstepd import ctl, mount_lab_bpffs, wait_daemon

C, S = "qs-fscale-c", "qs-fscale-s"
NATIVE_C, NATIVE_S = "198.18.92.2", "198.18.92.1"
TUNNEL_C, TUNNEL_S = "198.19.92.2", "198.19.92.1"
SERVERS = [f"198.18.93.{i}" for i in range(1, 251)]

RESPONDER = r"""
import json, selectors, signal, socket, sys, time
servers, tunnel, out = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
sel = selectors.DefaultSelector()
for a in servers:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((a, 443)); s.setblocking(False); sel.register(s, selectors.EVENT_READ)
initial = bytes([0xc1, 0, 0, 0, 1, 8]) + bytes(8) + bytes([8]) + bytes(8) + bytes(200)
short = bytes([0x41]) + bytes(59)
first_native = {}   # (client address, port) of flows seen natively -> time
counts = {"long_headers": 0, "short_channel": 0, "short_native": 0}
def dump(*_):
    with open(out, "w") as f:
        json.dump({"counts": counts, "native_flows": len(first_native)}, f)
    if _: sys.exit(0)
signal.signal(signal.SIGTERM, dump)
signal.signal(signal.SIGINT, dump)
last = time.time()
while True:
    for key, _ in sel.select(0.5):
        for _ in range(256):
            try:
                data, peer = key.fileobj.recvfrom(2048)
            except BlockingIOError:
                break
            if data[0] & 0x80:
                counts["long_headers"] += 1
                key.fileobj.sendto(initial, peer)
                continue
            if peer[0] == tunnel:
                counts["short_channel"] += 1
            else:
                counts["short_native"] += 1
                first_native.setdefault(peer, time.time())
            key.fileobj.sendto(short, peer)
    if time.time() - last > 1:
        dump(); last = time.time()
"""

DRIVER = r"""
import collections, heapq, json, resource, selectors, socket, sys, time
servers = sys.argv[1].split(","); flows, rate, churn, interval = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
resource.setrlimit(resource.RLIMIT_NOFILE, (flows + 4096, flows + 4096))
initial = bytes([0xc1, 0, 0, 0, 1, 8]) + bytes(8) + bytes([8]) + bytes(8) + bytes(1180)
handshake = bytes([0xe1, 0, 0, 0, 1, 8]) + bytes(8) + bytes([8]) + bytes(8) + bytes(60)
short = bytes([0x41]) + bytes(99)
sel = selectors.DefaultSelector()
open_flows = collections.OrderedDict()   # socket -> [state, its number, packets sent]
due = []  # (time, number, socket): a handshaken flow's next short header
stats = {"opened": 0, "closed": 0, "handshaken": 0, "send_errors": 0, "open_errors": 0}
start = time.time(); n_next = 0
def report(phase):
    print(json.dumps({"t": round(time.time() - start, 1), "phase": phase, "open": len(open_flows), **stats}), flush=True)
def open_one():
    global n_next
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((servers[n_next % len(servers)], 443)); s.setblocking(False); s.send(initial)
    except OSError:
        stats["open_errors"] += 1; s.close(); return
    n_next += 1
    sel.register(s, selectors.EVENT_READ)
    open_flows[s] = [0, n_next, 0]; stats["opened"] += 1
def close_oldest(n):
    for _ in range(min(n, len(open_flows))):
        s, _ = open_flows.popitem(last=False)
        sel.unregister(s); s.close(); stats["closed"] += 1
phase_end_open = None; last_report = 0; credit = 0.0; last_t = time.time()
while True:
    now = time.time()
    credit += (now - last_t) * rate; last_t = now
    if phase_end_open is None:
        while credit >= 1 and len(open_flows) < flows:
            open_one(); credit -= 1
        if len(open_flows) >= flows:
            phase_end_open = now; report("opened"); credit = 0
    else:
        if now - phase_end_open > churn:
            break
        k = int(credit); credit -= k
        close_oldest(k)
        for _ in range(k): open_one()
    for key, _ in sel.select(0.005):
        s = key.fileobj
        while True:
            try:
                data = s.recv(2048)
            except (BlockingIOError, ConnectionRefusedError):
                break
            st = open_flows.get(s)
            if st is not None and st[0] == 0 and data[0] & 0x80:
                st[0] = 1; stats["handshaken"] += 1
                try:
                    s.send(handshake); s.send(short)
                except OSError:
                    stats["send_errors"] += 1
                heapq.heappush(due, (now + 0.05, st[1], s))
    # the short headers due (a heap: a flow closed since is skipped)
    sent = 0
    while due and due[0][0] <= now and sent < 3000:
        _, i, s = heapq.heappop(due)
        st = open_flows.get(s)
        if st is None:
            continue
        try:
            s.send(short)
        except OSError:
            stats["send_errors"] += 1
        # as a connection does: a few packets at once after the handshake (its request,
        # acknowledgements), then one every interval
        st[2] += 1
        heapq.heappush(due, (now + (0.05 if st[2] < 4 else interval), i, s))
        sent += 1
    if now - last_report >= 1:
        report("open" if phase_end_open is None else "churn"); last_report = now
report("end")
"""


def sh_c(*cmd, **kw):
    return netns.netns(C, *cmd, **kw)


def setup():
    netns.remove_namespaces(C, S)
    netns.create_veth_pair(C, "fsn0", ([NATIVE_C], []), S, "fsn1", ([NATIVE_S], []))
    netns.sh("ip", "link", "add", "fsc1", "netns", S, "type", "veth", "peer", "name", "fsc0",
             "netns", C)
    for ns, ifc, a in ((C, "fsc0", TUNNEL_C), (S, "fsc1", TUNNEL_S)):
        netns.sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", ifc)
        netns.sh("ip", "-n", ns, "link", "set", ifc, "up")
    netns.sh("ip", "-n", C, "route", "add", "default", "via", NATIVE_S)
    for a in SERVERS:
        netns.sh("ip", "-n", S, "addr", "add", f"{a}/32", "dev", "lo")
    # Many neighbours, sockets and conntrack-free paths: room for them.
    netns.netns(C, "sysctl", "-qw", "net.core.rmem_max=8388608")
    netns.netns(S, "sysctl", "-qw", "net.core.rmem_max=8388608")


def status(sock):
    return json.loads(ctl(C, sock, "status", "--json").stdout)


def rss_fds(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    return rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def elements():
    n = 0
    out = sh_c("nft", "-j", "list", "set", "inet", "quicstep", "routed4", check=False).stdout
    for item in json.loads(out or '{"nftables": []}')["nftables"]:
        n += len(item.get("set", {}).get("elem", []))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--rate", type=int, default=1000, help="new flows per second")
    ap.add_argument("--churn", type=float, default=30, help="seconds of churn after opening")
    ap.add_argument("--interval", type=float, default=5, help="seconds between a flow's packets")
    ap.add_argument("--drain", type=float, default=30,
                    help="seconds to wait for the elements to go after every socket closed")
    ap.add_argument("--out", default=None, help="directory for the JSON and logs")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_flow_scale: run as root")
    work = args.out or tempfile.mkdtemp(prefix="qs-fscale-")
    os.makedirs(work, exist_ok=True)
    p = procs.Procs()
    config = os.path.join(work, "quicstepd.toml")
    setup()
    try:
        with open(config, "w") as f:
            f.write(f'[daemon]\nchannel_interface = "fsc0"\nchannel_kind = "interface"\n'
                    f'channel_exempt = ["{TUNNEL_S}"]\nnative_path = "routed"\n'
                    f'guard_pin_dir = "{mount_lab_bpffs()}"\n')
        sock = os.path.join(work, "control.sock")
        resp_out = os.path.join(work, "responder.json")
        responder = p.start(S, [sys.executable, "-c", RESPONDER, ",".join(SERVERS), TUNNEL_C,
                                resp_out], os.path.join(work, "responder.log"))
        daemon = p.start(C, [binaries.path("quicstepd"), "--config", config, "--control", sock],
                         os.path.join(work, "quicstepd.log"))
        wait_daemon(C, sock, daemon)
        driver = subprocess.Popen(["ip", "netns", "exec", C, sys.executable, "-c", DRIVER,
                                   ",".join(SERVERS), str(args.flows), str(args.rate),
                                   str(args.churn), str(args.interval)],
                                  stdout=subprocess.PIPE, text=True)
        rows = []
        last_decided, last_t = None, None
        for line in driver.stdout:
            d = json.loads(line)
            st = status(sock)
            decided = sum(v["packets"] for v in st["daemon"]["decided_outbound"].values())
            now = time.time()
            rate = (decided - last_decided) / (now - last_t) if last_t else 0.0
            last_decided, last_t = decided, now
            rss, fds = rss_fds(daemon.pid)
            try:
                with open(resp_out) as f:
                    native_flows = json.load(f)["native_flows"]
            except (OSError, ValueError):
                native_flows = 0
            row = {**d, "decisions_per_s": round(rate), "tracked": st["flows"]["tracked"],
                   "with_rule": st["routed"]["flows_with_rule"], "rss_mb": round(rss, 1),
                   "fds": fds, "native_flows_seen": native_flows,
                   "observed_lost": st["routed"]["observed_lost"],
                   "failed_back": st["watchdog"]["failed_back"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
        driver.wait()
        # Every socket closed with the driver: each flow's element must go (sock_diag's
        # announcements, or a lookup of the sockets when they overflowed). How long it took.
        closed_at, left = time.time(), []
        while time.time() - closed_at < args.drain:
            left.append((round(time.time() - closed_at, 1), elements()))
            if left[-1][1] == 0:
                break
            time.sleep(0.5)
        print(f"elements after the driver exited (s, left): {left}", flush=True)
        st = status(sock)
        udp_left = len(sh_c("ss", "-Huan").stdout.splitlines())
        print(f"UDP sockets left in the client namespace: {udp_left}; flows tracked "
              f"{st['flows']['tracked']}, watched {st['routed']['flows_watched']}, sockets "
              f"closed {st['routed']['sockets_closed']}", flush=True)
        final = {"elements_after_close": left[-1][1], "drain": left, "udp_sockets_left": udp_left,
                 "status": st["routed"],
                 "reasons": st["daemon"]["reasons"],
                 "flows": st["flows"], "watchdog": st["watchdog"]}
        p.stop(responder)
        with open(resp_out) as f:
            final["responder"] = json.load(f)
        final["rss_mb"], final["fds"] = rss_fds(daemon.pid)
        print(json.dumps(final, indent=1))
        with open(os.path.join(work, "flow_scale.json"), "w") as f:
            json.dump({"args": vars(args), "rows": rows, "final": final}, f, indent=1)
        print(f"bench_flow_scale: results in {work}")
    finally:
        p.stop_all()
        sh_c(binaries.path("quicstepd"), "--cleanup", "--config", config, check=False)
        netns.remove_namespaces(C, S)


if __name__ == "__main__":
    main()
