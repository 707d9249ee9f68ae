"""up / down / status: the lab's steps in order, with cleanup on failure."""
import os
import shutil
import sys
import time

from . import dns, links, netns, profiles, state, wireguard
from . import topology as topo
from .shell import LabError, run

# Fault injection for the tests: QSLAB_FAIL_AT=<step> makes `up` fail at that step.
ENV_FAIL_AT = "QSLAB_FAIL_AT"
STEPS = ["namespaces", "links", "routes", "neighbours", "nat", "wireguard", "dns", "rates",
         "delay_line", "handshake"]


def _log(msg):
    print(f"qslab: {msg}", file=sys.stderr, flush=True)


def up(profile_name="default", channel_rate=None, with_dns=True, full_vpn=False):
    profile = profiles.load(profile_name, channel_rate)  # refuse a bad profile first
    leftovers = netns.existing()
    if leftovers or os.path.exists(state.STATE_DIR):
        _log(f"removing leftovers of an earlier run ({', '.join(leftovers) or 'state dir'})")
        down(quiet=True)
    state.reset()
    procs = []
    step = "start"
    fail_at = os.environ.get(ENV_FAIL_AT)
    try:
        for step in STEPS:
            if step == fail_at:
                raise LabError(f"injected failure at step `{step}' ({ENV_FAIL_AT})")
            if step == "namespaces":
                netns.create_hosts()
            elif step == "links":
                netns.create_links()
            elif step == "routes":
                netns.create_routes()
            elif step == "neighbours":
                netns.resolve_neighbours()
            elif step == "nat":
                netns.create_provider_nat()
            elif step == "wireguard":
                wireguard.up(procs)
            elif step == "dns" and with_dns:
                dns.up(procs)
            elif step == "rates":
                links.apply_rates(profile)
            elif step == "delay_line":
                links.start_delay_line(profile, procs)
            elif step == "handshake":
                wireguard.wait_handshake()
        if full_vpn:
            wireguard.set_full_vpn(True)
        doc = describe(profile, with_dns)
        state.write_status(doc)
    except BaseException as e:
        _log(f"up failed at step `{step}': {e}; tearing down")
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=3)
            except Exception:
                p.kill()
                p.wait()
        down(quiet=True)
        raise
    return doc


def down(quiet=False):
    """Removes everything the lab made; safe to run any time, also after a crash."""
    state.kill_recorded()
    netns.delete_all()
    wireguard.remove_stale_sockets()
    dns.down()
    shutil.rmtree(state.STATE_DIR, ignore_errors=True)
    if not quiet:
        _log("down: lab removed")


def leftovers():
    """What of the lab still exists: namespaces, WireGuard sockets, state dir, processes.
    Empty when down worked."""
    out = [f"netns {n}" for n in netns.existing()]
    for ifname in (topo.CHANNEL.client_if, topo.CHANNEL.provider_if):
        sock = os.path.join(wireguard.UAPI_DIR, f"{ifname}.sock")
        if os.path.exists(sock):
            out.append(f"socket {sock}")
    links_root = run("ip", "-o", "link", "show").splitlines()
    for line in links_root:
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith("qsw-") or name.startswith("to-"):
            out.append(f"interface {name} in the root namespace")
    if os.path.exists(state.STATE_DIR):
        out.append(f"state dir {state.STATE_DIR}")
    if os.path.exists(dns.RESOLV_DIR):
        out.append(f"resolver dir {dns.RESOLV_DIR}")
    return out


def describe(profile, with_dns):
    """The lab as JSON: everything tests and tools need, found without hard-coding."""
    ch = topo.CHANNEL
    hosts = {}
    for h in topo.HOSTS:
        ifs = topo.host_addresses(h)
        if h == "client":
            ifs[ch.client_if] = {"peer": "provider (WireGuard)", "v4": [ch.client_v4], "v6": [ch.client_v6]}
        if h == "provider":
            ifs[ch.provider_if] = {"peer": "client (WireGuard)", "v4": [ch.provider_v4], "v6": [ch.provider_v6]}
        hosts[h] = {"netns": topo.netns(h), "interfaces": ifs}
    access, isp, prov = topo.link("access"), topo.link("isp"), topo.link("provider")
    procs = {}
    pid_dir = state.path("pids")
    for entry in sorted(os.listdir(pid_dir)) if os.path.isdir(pid_dir) else []:
        with open(os.path.join(pid_dir, entry)) as f:
            procs[entry.removesuffix(".pid")] = int(f.read().split()[0])
    return {
        "version": 1,
        "state_dir": state.STATE_DIR,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "profile": profile.as_json(),
        "hosts": hosts,
        "client": {
            "netns": topo.netns("client"),
            "native": {"interface": access.a_if,
                       "v4": [access.v4(i) for i in access.a_ids],
                       "v6": [access.v6(i) for i in access.a_ids],
                       "gateway_v4": access.v4(access.b_ids[0]),
                       "gateway_v6": access.v6(access.b_ids[0])},
            "channel": {"interface": ch.client_if, "v4": ch.client_v4, "v6": ch.client_v6,
                        "table": ch.table, "fwmark": ch.fwmark,
                        "rule": f"from {ch.client_v4} / {ch.client_v6} lookup {ch.table}",
                        "endpoint": f"{prov.v4(prov.a_ids[0])}:{ch.listen_port}",
                        "full_vpn": wireguard.full_vpn_enabled()},
            "resolvers": [topo.DNS_V4, topo.DNS_V6] if with_dns else [],
        },
        "censor": {"netns": topo.netns("censor"), "client_interface": access.b_if,
                   "uplink_interface": isp.a_if},
        "provider": {"netns": topo.netns("provider"), "wg_interface": ch.provider_if,
                     "uplink_interface": prov.a_if,
                     "v4": prov.v4(prov.a_ids[0]), "v6": prov.v6(prov.a_ids[0]),
                     "tunnel_v4": ch.provider_v4, "tunnel_v6": ch.provider_v6,
                     "listen_port": ch.listen_port, "peer_allowed_ips": ch.allowed_ips},
        "inet": {"netns": topo.netns("inet")},
        "servers": [{"name": s.name, "host": s.host, "netns": topo.netns(s.host),
                     "v4": s.v4, "v6": s.v6} for s in topo.SERVERS],
        "dns": {"netns": topo.netns(topo.DNS_HOST), "v4": topo.DNS_V4, "v6": topo.DNS_V6,
                "running": with_dns,
                "queries_log": state.path("logs", "dnsmasq-queries.log"),
                "names": {n: {"v4": s.v4, "v6": s.v6, "server": s.name}
                          for n, s in topo.DNS_NAMES.items()}},
        "links": {l.name: {"a": l.a, "a_interface": l.a_if, "b": l.b, "b_interface": l.b_if,
                           "emulation": vars(profile.links.get(l.name, profiles.LinkEmulation()))}
                  for l in topo.LINKS},
        "processes": procs,
    }


def status():
    doc = state.read_status()
    if doc is None:
        return {"running": False, "leftovers": leftovers()}
    missing = [h for h, v in doc["hosts"].items() if v["netns"] not in netns.existing()]
    dead = [n for n, pid in doc["processes"].items() if not state.alive(pid)]
    doc["running"] = not missing and not dead
    doc["missing_namespaces"] = missing
    doc["dead_processes"] = dead
    doc["client"]["channel"]["full_vpn"] = wireguard.full_vpn_enabled() if not missing else False
    return doc
