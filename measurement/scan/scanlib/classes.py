"""A domain's class, decided from its record alone (no state, no I/O).

Per address (every address of the apex and of www., IPv4 and IPv6; a www. address the
apex also has is probed once, and its record is a copy marked `same_as`, so it weighs
nothing extra):
  quic           the QUIC handshake completed (`quic: true`)
  quicstep_ok    NAT rebinding passed (a new client port, same connection ID: the server
                 followed an address change it did not ask for), and the address migration
                 test passed or was not run (it runs only with --second-local-address; when
                 it runs, the new client address must be followed too, as QUICstep's switch
                 from the channel to the native path changes the client's address)
  port_migration the active port-migration test passed (new socket, new connection ID,
                 path validation, the response on the new path): the paper's
                 "Connection migration" column

Per domain, the first that holds:
  dns_failed           no name (apex, www.) resolved to any address
  no_quic              addresses, but no QUIC handshake completed on any of them
  quicstep_compatible  some address is quicstep_ok
  quic_no_migration    QUIC on some address, quicstep_ok on none
and, separately, `port_migration`: some address passed the port-migration test.
"""
from dataclasses import dataclass
from typing import Iterator, List, Optional

CLASSES = ("quicstep_compatible", "quic_no_migration", "no_quic", "dns_failed")
SHORT = {"quicstep_compatible": "compat", "quic_no_migration": "no-mig",
         "no_quic": "no-quic", "dns_failed": "dns-fail"}


def _label(addr: dict, test: str) -> str:
    t = (addr.get("tests") or {}).get(test) or {}
    return t.get("label", "not_run")


def addresses(rec: dict) -> Iterator[dict]:
    for name in rec.get("names") or []:
        for addr in name.get("addresses") or []:
            yield addr


def address_quicstep_ok(addr: dict) -> bool:
    return (bool(addr.get("quic")) and _label(addr, "nat_rebinding") == "pass"
            and _label(addr, "address_migration") in ("pass", "not_run"))


def address_port_migration(addr: dict) -> bool:
    return bool(addr.get("quic")) and _label(addr, "port_migration") == "pass"


def address_failure(addr: dict) -> str:
    """Why a QUIC address is not quicstep_ok: the first failing test's label."""
    for test in ("nat_rebinding", "address_migration"):
        label = _label(addr, test)
        if label not in ("pass", "not_run"):
            return label
    return "not_run"


@dataclass(frozen=True)
class DomainClass:
    name: str             # one of CLASSES
    port_migration: bool  # some address passed active port migration
    primary_ip: Optional[str]  # the address the CSV shows: first QUIC address, else first


def classify(rec: dict) -> DomainClass:
    addrs: List[dict] = list(addresses(rec))
    quic = [a for a in addrs if a.get("quic")]
    primary = (quic or addrs or [{}])[0].get("ip")
    port = any(address_port_migration(a) for a in quic)
    if not addrs:
        return DomainClass("dns_failed", False, None)
    if not quic:
        return DomainClass("no_quic", False, primary)
    if any(address_quicstep_ok(a) for a in quic):
        return DomainClass("quicstep_compatible", port, primary)
    return DomainClass("quic_no_migration", port, primary)
