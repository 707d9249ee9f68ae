"""The three ways the client reaches the servers, switched the same way by the demo and by
the page-load measurements: native (nothing to do), full VPN (`qslab vpn on`: everything
through the channel) and QUICstep (quicstepd started on the client for the mode, stopped
after it). The caller passes its process list (processes are ended by PID) and a work
directory. One more mode, not among the three the demo and the default batches use: TUN, the
TUN engine quicstep-tun in the QUICstep place (qs_support/tun_engine.py). Two more for the
tproxy channel (qs_support/shadowsocks.py; the proxy server and clients are the caller's to
start, `proxy_server` its address): the full proxy (all client traffic through Shadowsocks)
and QUICstep with the proxy as its channel. And QUICstep with permissive addressing, the
paper's mode: channel packets keep the client's native source address, which the provider
is made to accept for the mode (its WireGuard peer's allowed IPs), so the server never sees
an address change and no flow migrates."""
import json
import os
from contextlib import contextmanager

from qs_support import lab as qslab_lab
from qs_support import quicstepd, shadowsocks, tun_engine

MODES = ("native", "full VPN", "QUICstep")
TUN = "QUICstep TUN"
FULL_PROXY, QS_PROXY = "full proxy", "QUICstep proxy"
PROXY_MODES = (FULL_PROXY, QS_PROXY)
QS_PERMISSIVE = "QUICstep permissive"


def provider_accepts_native(lab, accept):
    """The provider's WireGuard peer (the client) allowed to send from the client's native
    addresses too (`accept`), or only from its tunnel addresses (the lab's default)."""
    prov = lab["provider"]
    allowed = list(prov["peer_allowed_ips"])
    if accept:
        native = lab["client"]["native"]
        allowed += [f"{a}/32" for a in native["v4"]] + [f"{a}/128" for a in native["v6"]]
    peer = qslab_lab.in_host(lab, "provider", "wg", "show", prov["wg_interface"],
                             "peers").stdout.split()
    if len(peer) != 1:
        raise RuntimeError(f"the provider's WireGuard device has {len(peer)} peers, not 1")
    qslab_lab.in_host(lab, "provider", "wg", "set", prov["wg_interface"], "peer", peer[0],
                      "allowed-ips", ",".join(allowed))


class PathModes:
    def __init__(self, lab, procs, work, quicstepd_extra=""):
        """lab: the lab's status(); procs: a qs_support.procs.Procs; quicstepd_extra: TOML
        appended to quicstepd's config (e.g. a [hold] section)."""
        self.lab, self.procs, self.work = lab, procs, work
        self.extra = quicstepd_extra
        self.ns = lab["client"]["netns"]
        self.sock = os.path.join(work, "control.sock")
        self.daemon = None
        self.tun = False
        self.proxy_server = None  # the proxy modes: the Shadowsocks server's address

    def enter(self, mode):
        known = MODES + (TUN, QS_PERMISSIVE) + PROXY_MODES
        if mode not in known:
            raise ValueError(f"unknown path mode {mode!r} (one of {', '.join(known)})")
        if mode in PROXY_MODES and not self.proxy_server:
            raise ValueError(f"{mode}: start the Shadowsocks server and clients first")
        if mode == "full VPN":
            qslab_lab.qslab("vpn", "on")
        elif mode in ("QUICstep", QS_PERMISSIVE):
            addressing = "permissive" if mode == QS_PERMISSIVE else None
            if addressing:
                provider_accepts_native(self.lab, True)
            config = quicstepd.write_config(os.path.join(self.work, "quicstepd.toml"),
                                           self.lab["client"]["channel"]["interface"],
                                           addressing=addressing, extra=self.extra)
            self.daemon = self.procs.start(self.ns, [quicstepd.daemon(), "--config", config,
                                                     "--control", self.sock],
                                           os.path.join(self.work, "quicstepd.log"))
            quicstepd.wait_daemon(self.ns, self.sock, self.daemon)
        elif mode == TUN:
            self.daemon = tun_engine.start(self.procs, self.lab, self.work, self.sock)
            self.tun = True
        elif mode == FULL_PROXY:
            shadowsocks.full_proxy_on(self.lab, self.proxy_server)
        elif mode == QS_PROXY:
            config = quicstepd.write_config(
                os.path.join(self.work, "quicstepd.toml"), None,
                extra=shadowsocks.quicstepd_extra(self.proxy_server) + self.extra)
            self.daemon = self.procs.start(self.ns, [quicstepd.daemon(), "--config", config,
                                                     "--control", self.sock],
                                           os.path.join(self.work, "quicstepd.log"))
            quicstepd.wait_daemon(self.ns, self.sock, self.daemon)

    def leave(self, mode):
        if mode == "full VPN":
            qslab_lab.qslab("vpn", "off")
        elif mode in ("QUICstep", QS_PERMISSIVE, QS_PROXY) and self.daemon:
            self.procs.stop(self.daemon, timeout=20)
            self.daemon = None
        if mode == QS_PERMISSIVE:
            provider_accepts_native(self.lab, False)
        elif mode == TUN and self.daemon:
            tun_engine.stop(self.procs, self.lab, self.daemon)
            self.daemon, self.tun = None, False
        elif mode == FULL_PROXY:
            shadowsocks.full_proxy_off(self.lab)

    @contextmanager
    def using(self, mode):
        try:  # a mode that failed half-way is undone too (the provider's allowed IPs)
            self.enter(mode)
            yield self
        finally:
            self.leave(mode)

    def quicstepd_status(self):
        """`quicstepctl status --json` of the running daemon (QUICstep mode), or the TUN
        engine's status, in the same vocabulary (TUN mode)."""
        if self.tun:
            return tun_engine.status(self.sock)
        return json.loads(quicstepd.ctl(self.ns, self.sock, "status", "--json").stdout)
