"""quicstep-tun, the TUN engine, as the lab's measurements run it: the client's routes go into
its TUN, and it carries its own WireGuard channel with the lab client's key and tunnel
addresses (so the provider needs no change). The lab's own channel interface must not run
beside it with the same key: start() removes the provider peer from it and the rules that
route the tunnel addresses' packets into it (the interface, its addresses and routes stay),
and stop() puts both back as they were; the provider follows
whichever socket sent it the last authenticated packet."""
import json
import os
import signal
import socket
import subprocess

from qs_support import binaries
from qs_support.procs import wait_for


def channel_dump(lab):
    """`wg show dump` of the lab client's channel: (interface fields, peer fields)."""
    c = lab["client"]
    dump = subprocess.run(["ip", "netns", "exec", c["netns"], "wg", "show",
                           c["channel"]["interface"], "dump"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    return dump[0].split("\t"), dump[1].split("\t")


def write_wg_quick(lab, path):
    """The lab client's channel as a wg-quick file (mode 0600) at `path`."""
    c = lab["client"]
    interface, peer = channel_dump(lab)
    private_key = interface[0]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"[Interface]\nPrivateKey = {private_key}\n"
                f"Address = {c['channel']['v4']}/32, {c['channel']['v6']}/128\n\n"
                f"[Peer]\nPublicKey = {peer[0]}\nEndpoint = {peer[2]}\n"
                "AllowedIPs = 0.0.0.0/0, ::/0\nPersistentKeepalive = 25\n")
    return path


def status(sock):
    """The engine's `status` (quicstepctl's vocabulary) from its control socket."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(sock)
        s.sendall(b"status\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return json.loads(data)


def helper_pid(engine_pid):
    """The engine's child (its WireGuard helper), or None."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == engine_pid:
                    return int(p)
        except (OSError, IndexError, ValueError):
            continue
    return None


def peer_setting(lab, work):
    """The lab channel's provider peer as `wg set IFACE` arguments that put it back as it is
    (its preshared key, if any, in a 0600 file in `work`): (public key, arguments)."""
    peer = channel_dump(lab)[1]
    # public key, preshared key, endpoint, allowed ips, ..., persistent keepalive
    pub, psk, endpoint, allowed, keep = peer[0], peer[1], peer[2], peer[3], peer[7]
    args = ["peer", pub, "endpoint", endpoint, "allowed-ips", allowed]
    if keep not in ("off", "0"):
        args += ["persistent-keepalive", keep]
    if psk != "(none)":
        path = os.path.join(work, "channel.psk")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(psk + "\n")
        args += ["preshared-key", path]
    return pub, args


def write_config(path, wg_config, sock):
    """quicstep-tun's config as a user writes it: quicstepd's file with a [tun] table naming
    the channel's wg-quick file and the status socket (the rest: defaults)."""
    with open(path, "w") as f:
        f.write(f'[tun]\nwg_config = "{wg_config}"\ncontrol_socket = "{sock}"\n')
    return path


def start(procs, lab, work, sock, extra_args=()):
    """Sets the lab's channel interface down and starts `quicstep-tun --config FILE` (a [tun]
    table naming the lab client's channel; `extra_args` after it, e.g. --no-offload); returns
    its process once a lookup through its channel is answered. Raises RuntimeError naming its
    log otherwise."""
    c = lab["client"]
    ns = c["netns"]
    conf = write_wg_quick(lab, os.path.join(work, "channel.conf"))
    p_pub, restore = peer_setting(lab, work)
    lab["_tun_engine_restore_peer"] = restore
    subprocess.run(["ip", "netns", "exec", ns, "wg", "set", c["channel"]["interface"], "peer",
                    p_pub, "remove"], check=True)
    # The lab's rules that send what the tunnel addresses source into its channel table (pref
    # 100) would take the applications' packets from the TUN's address (the same tunnel
    # address) past the engine's TUN: they go while the engine runs.
    for fam, addr in (("-4", c["channel"]["v4"]), ("-6", c["channel"]["v6"])):
        subprocess.run(["ip", "netns", "exec", ns, "ip", fam, "rule", "del", "from", addr,
                        "lookup", str(c["channel"]["table"]), "pref", "100"], check=False)
    log = os.path.join(work, "quicstep-tun.log")
    config = write_config(os.path.join(work, "quicstep-tun.toml"), conf, sock)
    p = procs.start(ns, [binaries.path("quicstep-tun"), "--config", config, *extra_args], log)
    up = wait_for(lambda: os.path.exists(sock), p, seconds=15) and wait_for(
        lambda: subprocess.run(["ip", "netns", "exec", ns, "dig", "+short", "+tries=1",
                                "+time=1", "open.test"], capture_output=True,
                               text=True).stdout.strip() != "", p, seconds=20)
    if not up:
        stop(procs, lab, p)
        raise RuntimeError(f"quicstep-tun did not come up (see {log})")
    return p


def stop(procs, lab, p):
    """Stops quicstep-tun (SIGTERM: it removes its TUN and rules) and gives the lab's channel
    interface its provider peer back."""
    procs.stop(p, sig=signal.SIGTERM, timeout=15)
    c = lab["client"]
    subprocess.run(["ip", "netns", "exec", c["netns"], "wg", "set", c["channel"]["interface"],
                    *lab.pop("_tun_engine_restore_peer")], check=True)
    for fam, addr in (("-4", c["channel"]["v4"]), ("-6", c["channel"]["v6"])):
        subprocess.run(["ip", "netns", "exec", c["netns"], "ip", fam, "rule", "add", "from",
                        addr, "lookup", str(c["channel"]["table"]), "pref", "100"], check=True)
