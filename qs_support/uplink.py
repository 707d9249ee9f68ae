"""A second uplink for the lab's client (a phone's cellular beside its Wi-Fi, a laptop's
Ethernet beside its Wi-Fi), and the move of the client's default routes onto it with the
first link down — the network change that tests of quicstepd and quicstep-tun make.

The new link is a veth pair from the client to its ISP router (the censor's namespace, so
the censor still sees everything native), on its own subnets (198.18.5.0/24,
2001:db8:5::/64); the lab's internet routes them back through the censor. Everything is
removed again by `remove()`, and `restore_first()` brings the first link back as the lab
made it (its IPv6 addresses too: the kernel drops them when a link goes down)."""
import json
import subprocess
import time

CLIENT_IF, ROUTER_IF = "qst-up2", "qst-up2c"
NET4, NET6 = "198.18.5", "2001:db8:5"
CLIENT_V4, CLIENT_V6 = f"{NET4}.2", f"{NET6}::2"
GATEWAY_V4, GATEWAY_V6 = f"{NET4}.1", f"{NET6}::1"


def _run(netns, *cmd, check=True):
    return subprocess.run(["ip", "netns", "exec", netns, *cmd], capture_output=True, text=True,
                          check=check, timeout=30).stdout


class FirstLink:
    """The client's native link as the lab made it: down() takes it down (the kernel drops
    its IPv6 addresses and its routes), up() brings it back with its IPv6 addresses and the
    default routes it had, as SLAAC and a network manager would (retried: a link's prefix
    routes come back only once it is up; raises when the routes do not take)."""

    def __init__(self, lab):
        c = lab["client"]
        self.ns = c["netns"]
        self.name = c["native"]["interface"]
        self.gateway = {4: c["native"]["gateway_v4"], 6: c["native"]["gateway_v6"]}
        self._v6 = []
        self._routes = {}

    def down(self):
        self._routes = {fam: json.loads(_run(self.ns, "ip", "-j", f"-{fam}", "route", "show",
                                             "default") or "[]") for fam in (4, 6)}
        self._v6 = [line.split()[3] for line in _run(
            self.ns, "ip", "-o", "-6", "addr", "show", "dev", self.name, "scope",
            "global").splitlines()]
        _run(self.ns, "ip", "link", "set", self.name, "down")

    def up(self, seconds=10):
        _run(self.ns, "ip", "link", "set", self.name, "up")
        for addr in self._v6:
            _run(self.ns, "ip", "-6", "addr", "replace", addr, "dev", self.name, "nodad")
        for fam in (4, 6):
            routes = [r for r in self._routes.get(fam, []) if r.get("dev") == self.name] or \
                [{"gateway": self.gateway[fam], "dev": self.name}]
            for r in routes:
                words = (["default", "via", r["gateway"], "dev", r["dev"]] if "gateway" in r
                         else ["default", "dev", r["dev"]])
                deadline = time.time() + seconds
                while True:
                    res = subprocess.run(["ip", "netns", "exec", self.ns, "ip", f"-{fam}",
                                          "route", "replace", *words], capture_output=True,
                                         text=True, timeout=30)
                    if res.returncode == 0:
                        break
                    if time.time() > deadline:
                        raise AssertionError(f"default route {words} not restored: "
                                             f"{res.stderr.strip()}")
                    time.sleep(0.1)


class SecondUplink:
    def __init__(self, lab):
        c = lab["client"]
        self.client_ns = c["netns"]
        self.router_ns = lab["censor"]["netns"]
        self.inet_ns = lab["inet"]["netns"]
        self.first = FirstLink(lab)
        self.first_client = {4: c["native"]["v4"][0], 6: c["native"]["v6"][0]}
        self.addresses = {CLIENT_V4, CLIENT_V6}

    def add(self):
        """Creates the link and its routes back (the client's default routes unchanged)."""
        hops = {}
        for fam in (4, 6):
            route = _run(self.inet_ns, "ip", f"-{fam}", "route", "get", self.first_client[fam])
            hops[fam] = route.split(" via ")[1].split()[0]
        _run(self.client_ns, "ip", "link", "add", CLIENT_IF, "type", "veth", "peer", "name",
             ROUTER_IF, "netns", self.router_ns)
        for ns, ifname, v4, v6 in ((self.client_ns, CLIENT_IF, CLIENT_V4, CLIENT_V6),
                                   (self.router_ns, ROUTER_IF, GATEWAY_V4, GATEWAY_V6)):
            _run(ns, "ip", "addr", "add", f"{v4}/24", "dev", ifname)
            _run(ns, "ip", "addr", "add", f"{v6}/64", "dev", ifname, "nodad")
            _run(ns, "ip", "link", "set", ifname, "up")
        _run(self.inet_ns, "ip", "-4", "route", "replace", f"{NET4}.0/24", "via", hops[4])
        _run(self.inet_ns, "ip", "-6", "route", "replace", f"{NET6}::/64", "via", hops[6])
        # A link that comes up has talked to its gateway (DHCP, router advertisements) before
        # it carries traffic: the gateways' neighbour entries are resolved here, or the first
        # packets wait for neighbour discovery (a fresh veth's first solicitation can go
        # unanswered, and the next is a second later).
        for gw in (GATEWAY_V4, GATEWAY_V6):
            deadline = time.time() + 10
            while subprocess.run(["ip", "netns", "exec", self.client_ns, "ping", "-c", "1", "-W",
                                  "1", "-I", CLIENT_IF, gw], capture_output=True).returncode:
                if time.time() > deadline:
                    raise AssertionError(f"the second uplink's gateway {gw} does not answer")

    def switch(self):
        """The first link goes down and the default routes move to the second."""
        self.first.down()
        _run(self.client_ns, "ip", "-4", "route", "replace", "default", "via", GATEWAY_V4, "dev",
             CLIENT_IF)
        _run(self.client_ns, "ip", "-6", "route", "replace", "default", "via", GATEWAY_V6, "dev",
             CLIENT_IF)

    def prefer(self):
        """The default routes move to the second link while the first stays up, as when a
        phone's Wi-Fi joins while its cellular network lingers, or a laptop's Ethernet is
        plugged in beside its Wi-Fi."""
        _run(self.client_ns, "ip", "-4", "route", "replace", "default", "via", GATEWAY_V4, "dev",
             CLIENT_IF)
        _run(self.client_ns, "ip", "-6", "route", "replace", "default", "via", GATEWAY_V6, "dev",
             CLIENT_IF)

    def restore_first(self):
        """The first link back as the lab made it, its default routes included."""
        self.first.up()

    def remove(self):
        """Deletes the link and the routes back (the other end goes with it)."""
        _run(self.client_ns, "ip", "link", "del", CLIENT_IF, check=False)
        _run(self.inet_ns, "ip", "-4", "route", "del", f"{NET4}.0/24", check=False)
        _run(self.inet_ns, "ip", "-6", "route", "del", f"{NET6}::/64", check=False)
