"""The lab's address plan: hosts, links, addresses, routes, servers and DNS names.

Pure data, no I/O. Every address is in 198.18.0.0/15 or 2001:db8::/32 (RFC 2544 and
RFC 3849 ranges): nothing here can route off the machine.

    client ── censor ── inet ──┬── provider  (WireGuard server, NAT)
      ╰─ qsw-client ~~~~~~~~~~~│~~~~ qsw-prov   (the handshake channel)
                               ├── srv1, srv2 (server addresses)
                               └── dns        (dnsmasq)
"""
from dataclasses import dataclass, field

NETNS_PREFIX = "qs-"
HOSTS = ["client", "censor", "inet", "provider", "srv1", "srv2", "dns"]
ROUTERS = ["censor", "inet", "provider"]  # hosts that forward


def netns(host):
    return NETNS_PREFIX + host


@dataclass
class Link:
    """A veth pair between host a and host b. Interfaces are named after the peer
    (`to-<peer>`), unique inside each namespace; the veth never exists in the root
    namespace."""
    name: str            # link name used by profiles (e.g. "uplink")
    a: str               # host names
    b: str
    v4_net: str          # "198.18.1" (a /24)
    v6_net: str          # "2001:db8:1" (a /64)
    a_ids: list          # host ids of a's addresses in the /24 and /64 (first is primary)
    b_ids: list

    @property
    def a_if(self):
        return f"to-{self.b}"

    @property
    def b_if(self):
        return f"to-{self.a}"

    def v4(self, i):
        return f"{self.v4_net}.{i}"

    def v6(self, i):
        return f"{self.v6_net}::{i}"


# The inet router is always host b of its links: the delay line runs there.
LINKS = [
    Link("access", "client", "censor", "198.18.1", "2001:db8:1", [2, 3], [1]),
    Link("isp", "censor", "inet", "198.18.2", "2001:db8:2", [2], [1]),
    Link("provider", "provider", "inet", "198.18.3", "2001:db8:3", [2], [1]),
    Link("dns", "dns", "inet", "198.18.4", "2001:db8:4", [53], [1]),
    Link("srv1", "srv1", "inet", "198.18.10", "2001:db8:10", [10, 11, 12], [1]),
    Link("srv2", "srv2", "inet", "198.18.11", "2001:db8:11", [10, 11], [1]),
]

# Routes beyond the connected ones: (host, destination v4, via v4, destination v6, via v6).
# Every leaf has a default route towards the inet router; inet reaches the client's
# network through the censor.
ROUTES = [
    ("client", "default", "198.18.1.1", "default", "2001:db8:1::1"),
    ("censor", "default", "198.18.2.1", "default", "2001:db8:2::1"),
    ("provider", "default", "198.18.3.1", "default", "2001:db8:3::1"),
    ("dns", "default", "198.18.4.1", "default", "2001:db8:4::1"),
    ("srv1", "default", "198.18.10.1", "default", "2001:db8:10::1"),
    ("srv2", "default", "198.18.11.1", "default", "2001:db8:11::1"),
    ("inet", "198.18.1.0/24", "198.18.2.2", "2001:db8:1::/64", "2001:db8:2::2"),
]


@dataclass
class Channel:
    """The WireGuard handshake channel. Interface names are unique machine-wide:
    wireguard-go's UAPI sockets share /var/run/wireguard across namespaces."""
    client_if: str = "qsw-client"
    provider_if: str = "qsw-prov"
    client_v4: str = "198.19.255.2"
    client_v6: str = "2001:db8:ffff::2"
    provider_v4: str = "198.19.255.1"
    provider_v6: str = "2001:db8:ffff::1"
    net_v4: str = "198.19.255.0/24"
    net_v6: str = "2001:db8:ffff::/64"
    listen_port: int = 51820
    table: int = 51820          # client routing table: default dev qsw-client
    fwmark: int = 51820         # client's encapsulated packets carry it (full-VPN rules)

    @property
    def allowed_ips(self):
        """What the provider accepts from the client: its tunnel addresses only."""
        return [f"{self.client_v4}/32", f"{self.client_v6}/128"]


CHANNEL = Channel()


@dataclass
class Server:
    name: str
    host: str
    v4: str
    v6: str


def _server_addrs():
    out = []
    for link in LINKS:
        if link.a.startswith("srv"):
            for n, i in enumerate(link.a_ids):
                out.append(Server(f"{link.a}-{chr(ord('a') + n)}", link.a, link.v4(i), link.v6(i)))
    return out


SERVERS = _server_addrs()
_S = {s.name: s for s in SERVERS}

# Lab DNS names -> server address. Servers with different migration behaviour run on
# different addresses; later issues pick the behaviour per address.
DNS_NAMES = {
    "open.test": _S["srv1-a"], "www.open.test": _S["srv1-a"],
    "blocked.test": _S["srv1-b"], "www.blocked.test": _S["srv1-b"],
    "other.test": _S["srv1-c"], "www.other.test": _S["srv1-c"],
    "nomigration.test": _S["srv2-a"], "www.nomigration.test": _S["srv2-a"],
    "retry.test": _S["srv2-b"], "www.retry.test": _S["srv2-b"],
}


def link(name):
    for l in LINKS:
        if l.name == name:
            return l
    raise KeyError(name)


def host_addresses(host):
    """{interface: {"v4": [...], "v6": [...], "peer": host}} for the host's veths."""
    out = {}
    for l in LINKS:
        if l.a == host:
            out[l.a_if] = {"peer": l.b, "v4": [l.v4(i) for i in l.a_ids],
                           "v6": [l.v6(i) for i in l.a_ids]}
        if l.b == host:
            out[l.b_if] = {"peer": l.a, "v4": [l.v4(i) for i in l.b_ids],
                           "v6": [l.v6(i) for i in l.b_ids]}
    return out


DNS_HOST = "dns"
DNS_V4 = link("dns").v4(53)
DNS_V6 = link("dns").v6(53)
