"""Caddy in the lab: a third-party HTTP/3 server (Debian's caddy 2.6, Go; its QUIC is
quic-go 0.29). That quic-go does not support connection migration: it announces
`disable_active_migration` in its transport parameters, accepts a client's packets from a
new address (it finds the connection by its ID) and keeps sending to the address of the
handshake. So it is a real server that does not follow QUICstep's move, written by no one
here: its answers keep coming through the channel and never natively.

Served: `htdocs` on port 443 of the given addresses (TCP for h1/h2, UDP for h3), with the
lab's certificate; no admin endpoint, no automatic HTTPS (nothing is fetched), its storage
and autosaved config under the work directory. Processes are the caller's Procs, ended by
PID."""
import json
import os
import time

from qs_support.shadowsocks import wait_bound

PORT = 443


def config(addresses, htdocs, key, cert, storage):
    listen = [f"[{a}]:{PORT}" if ":" in a else f"{a}:{PORT}" for a in addresses]
    return {
        "admin": {"disabled": True},
        "logging": {"logs": {"default": {"level": "WARN"}}},
        "storage": {"module": "file_system", "root": storage},
        "apps": {
            "http": {"servers": {"lab": {
                "listen": listen,
                "protocols": ["h1", "h2", "h3"],
                "automatic_https": {"disable": True},
                "tls_connection_policies": [{}],
                "routes": [{"handle": [{"handler": "file_server", "root": htdocs}]}],
            }}},
            "tls": {"certificates": {"load_files": [{"certificate": cert, "key": key}]}},
        },
    }


def start(procs, netns, addresses, htdocs, key, cert, work):
    """Caddy in `netns` serving `htdocs` over HTTP/3 on `addresses`, port 443. Returns the
    process once its UDP sockets are bound."""
    home = os.path.join(work, "caddy")
    os.makedirs(home, exist_ok=True)
    path = os.path.join(home, "caddy.json")
    with open(path, "w") as f:
        json.dump(config(addresses, htdocs, key, cert, os.path.join(home, "data")), f, indent=1)
    env = dict(os.environ, HOME=home, XDG_DATA_HOME=os.path.join(home, "data"),
               XDG_CONFIG_HOME=os.path.join(home, "config"))
    p = procs.start(netns, ["caddy", "run", "--config", path],
                    os.path.join(work, f"caddy-{time.time():.3f}.log"), env=env)
    for a in addresses:
        wait_bound(netns, "u", a, PORT, p, timeout=15)
    return p
