"""Shadowsocks in the lab, the user's proxy client of the tproxy channel (Debian's
shadowsocks-libev): ss-server at the provider (on the address of its WireGuard endpoint),
one ss-redir per address family on the client (127.0.0.1 and ::1, port 1080: each binds one
address), UDP and TCP relayed. quicstepd's `channel_kind = "tproxy"` hands them the channel
packets. `full_proxy` is the user's alternative, all client traffic through the proxy, as
the full VPN is for WireGuard: the standard tproxy setup (mark in a route chain, marked
packets to `local default dev lo`, `tproxy` at prerouting). Processes are the caller's
Procs and ended by PID."""
import os
import subprocess
import time
from contextlib import contextmanager

PORT, KEY, METHOD = 8388, "qs-lab-pass", "chacha20-ietf-poly1305"
PROXY_PORT = 1080
# The full-proxy mode's mark, table and rule priority (none of quicstepd's).
FULL_MARK, FULL_TABLE, FULL_PRIORITY = "0x5f", "51850", "10900"


def wait_bound(ns, proto, address, port, proc, timeout=10):
    """Waits until a socket of `proto` ("u", "t") is bound to address:port in `ns`."""
    where = f"[{address}]" if ":" in address else address
    deadline = time.time() + timeout
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args} exited with {proc.returncode}")
        out = subprocess.run(["ip", "netns", "exec", ns, "ss", f"-Hln{proto}",
                              f"src {where}:{port}"], capture_output=True, text=True).stdout
        if out.strip():
            return
        if time.time() > deadline:
            raise AssertionError(f"nothing at {proto} {address}:{port} in {ns}")
        time.sleep(0.05)


def server_address(lab):
    """The proxy server's address: the provider's, where its WireGuard endpoint is."""
    return lab["client"]["channel"]["endpoint"].rsplit(":", 1)[0]


def start_server(procs, lab, work):
    """ss-server at the provider. Returns (its address, the process)."""
    ns, address = lab["provider"]["netns"], server_address(lab)
    p = procs.start(ns, ["ss-server", "-s", address, "-p", str(PORT), "-k", KEY, "-m", METHOD,
                         "-u", "-t", "120"], os.path.join(work, "ss-server.log"))
    wait_bound(ns, "u", address, PORT, p)
    return address, p


def start_clients(procs, lab, server, work):
    """ss-redir -u -T (UDP and TCP by TPROXY) at 127.0.0.1:1080 and [::1]:1080 on the client.
    Returns the processes."""
    ns = lab["client"]["netns"]
    out = []
    for bind in ("127.0.0.1", "::1"):
        log = os.path.join(work, f"ss-redir-{bind.replace(':', '')}-{time.time():.3f}.log")
        p = procs.start(ns, ["ss-redir", "-s", server, "-p", str(PORT), "-b", bind, "-l",
                             str(PROXY_PORT), "-k", KEY, "-m", METHOD, "-u", "-T", "-t", "120"], log)
        wait_bound(ns, "u", bind, PROXY_PORT, p)
        wait_bound(ns, "t", bind, PROXY_PORT, p)
        out.append(p)
    return out


def quicstepd_extra(server):
    """quicstepd's config lines for the tproxy channel to these proxy clients."""
    return (f'channel_kind = "tproxy"\ntproxy_port = {PROXY_PORT}\n'
            f'channel_exempt = ["{server}"]\n')


def _full_proxy_ruleset(server):
    return f"""table inet qs_full_proxy {{
  chain out {{
    type route hook output priority mangle; policy accept;
    ip daddr {server} return
    fib daddr type local return
    meta l4proto {{ tcp, udp }} meta mark set {FULL_MARK}
  }}
  chain pre {{
    type filter hook prerouting priority mangle; policy accept;
    meta iif lo meta mark {FULL_MARK} meta l4proto udp tproxy ip to 127.0.0.1:{PROXY_PORT} accept
    meta iif lo meta mark {FULL_MARK} meta l4proto tcp tproxy ip to 127.0.0.1:{PROXY_PORT} accept
    meta iif lo meta mark {FULL_MARK} meta l4proto udp tproxy ip6 to [::1]:{PROXY_PORT} accept
    meta iif lo meta mark {FULL_MARK} meta l4proto tcp tproxy ip6 to [::1]:{PROXY_PORT} accept
    meta iif lo meta mark {FULL_MARK} drop
  }}
}}
"""


def _ns(ns, *cmd, check=True, input=None):
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True,
                          check=check, input=input, timeout=30)


def full_proxy_on(lab, server):
    """All the client's TCP and UDP through the proxy clients (not to the proxy server)."""
    ns = lab["client"]["netns"]
    for fam in ("-4", "-6"):
        _ns(ns, "ip", fam, "route", "replace", "local", "default", "dev", "lo", "table",
            FULL_TABLE)
        _ns(ns, "ip", fam, "rule", "add", "fwmark", FULL_MARK, "lookup", FULL_TABLE,
            "priority", FULL_PRIORITY)
    _ns(ns, "nft", "-f", "-", input=_full_proxy_ruleset(server))


def full_proxy_off(lab):
    ns = lab["client"]["netns"]
    _ns(ns, "nft", "delete", "table", "inet", "qs_full_proxy", check=False)
    for fam in ("-4", "-6"):
        _ns(ns, "ip", fam, "rule", "del", "priority", FULL_PRIORITY, check=False)
        _ns(ns, "ip", fam, "route", "flush", "table", FULL_TABLE, check=False)


@contextmanager
def full_proxy(lab, server):
    full_proxy_on(lab, server)
    try:
        yield
    finally:
        full_proxy_off(lab)
