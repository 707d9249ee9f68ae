"""V2Ray in the lab, a second proxy stack for the tproxy channel (Debian's v2ray, 4.34, Go):
a VMess server at the provider (on the address of its WireGuard endpoint, TCP port 10086,
its outbound `freedom`), and on the client a `dokodemo-door` inbound in tproxy mode (TCP
and UDP, `followRedirect`, one per address family on 127.0.0.1 and ::1, port 1081) whose
outbound is VMess to that server (UDP carried over VMess's TCP). This is V2Ray's documented
transparent-proxy setup; quicstepd's `channel_kind = "tproxy"` hands it the channel packets.
Processes are the caller's Procs and ended by PID."""
import json
import os
import time

from qs_support.shadowsocks import server_address, wait_bound

PORT, PROXY_PORT = 10086, 1081
USER_ID = "6e1d7a8c-2f43-4b6e-9a51-3c7f0d2b8e91"  # the lab's VMess user (not a secret)


def server_config(address):
    return {"log": {"loglevel": "warning"},
            "inbounds": [{"listen": address, "port": PORT, "protocol": "vmess",
                          "settings": {"clients": [{"id": USER_ID, "alterId": 0}]}}],
            "outbounds": [{"protocol": "freedom", "settings": {}}]}


def client_config(server):
    inbounds = [{"tag": f"tproxy-{i}", "listen": bind, "port": PROXY_PORT,
                 "protocol": "dokodemo-door",
                 "settings": {"network": "tcp,udp", "followRedirect": True},
                 "streamSettings": {"sockopt": {"tproxy": "tproxy"}}}
                for i, bind in enumerate(("127.0.0.1", "::1"))]
    return {"log": {"loglevel": "warning"}, "inbounds": inbounds,
            "outbounds": [{"protocol": "vmess", "settings": {"vnext": [{
                "address": server, "port": PORT,
                "users": [{"id": USER_ID, "alterId": 0, "security": "aes-128-gcm"}]}]}}]}


def _start(procs, ns, config, name, work):
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    return procs.start(ns, ["v2ray", "-config", path],
                       os.path.join(work, f"{name}-{time.time():.3f}.log"))


def start_server(procs, lab, work):
    """The VMess server at the provider. Returns (its address, the process)."""
    ns, address = lab["provider"]["netns"], server_address(lab)
    p = _start(procs, ns, server_config(address), "v2ray-server", work)
    wait_bound(ns, "t", address, PORT, p)
    return address, p


def start_client(procs, lab, server, work):
    """The transparent-proxy client on the client host. Returns the process."""
    ns = lab["client"]["netns"]
    p = _start(procs, ns, client_config(server), "v2ray-client", work)
    for bind in ("127.0.0.1", "::1"):
        wait_bound(ns, "u", bind, PROXY_PORT, p)
        wait_bound(ns, "t", bind, PROXY_PORT, p)
    return p


def quicstepd_extra(server):
    """quicstepd's config lines for the tproxy channel to this proxy client."""
    return (f'channel_kind = "tproxy"\ntproxy_port = {PROXY_PORT}\n'
            f'channel_exempt = ["{server}"]\n')
