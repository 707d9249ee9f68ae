"""A systemd unit's capabilities, and a command prefix that runs a root process under them
and nothing more (setpriv: a root process keeps only its bounding set across exec, as
systemd gives a root service with CapabilityBoundingSet and AmbientCapabilities)."""
import os


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unit_capabilities(unit):
    """CapabilityBoundingSet= of client/<unit>, as a list ("CAP_NET_ADMIN", ...)."""
    with open(os.path.join(REPO, "client", unit)) as f:
        return next(line.split("=", 1)[1].split() for line in f
                    if line.startswith("CapabilityBoundingSet="))


def under(capset):
    """The setpriv prefix that keeps `capset` only."""
    keep = ",".join("+" + c.lower().removeprefix("cap_") for c in capset)
    return ["setpriv", "--bounding-set", f"-all,{keep}", "--inh-caps", "-all",
            "--ambient-caps", "-all"]
