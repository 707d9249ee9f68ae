"""Named link profiles (lab/profiles.toml; PROFILES.md gives each number's source).

A profile gives three round-trip times — client–provider, provider–server,
client–server — and the channel's rate. The lab is a star around the inet router, so
the RTTs fix one one-way delay per spoke:

    RTT(c,p) = 2(dc + dp)   RTT(p,s) = 2(dp + ds)   RTT(c,s) = 2(dc + ds)
    dc = (cp + cs - ps)/4   dp = (cp + ps - cs)/4   ds = (ps + cs - cp)/4

dc goes on the censor–inet link (the client's side), dp on provider–inet, ds on each
server's and the DNS server's link. A negative delay means the three RTTs break the
triangle inequality: the profile is refused.
"""
import os
import tomllib
from dataclasses import dataclass, field

from .shell import LabError

PROFILES_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "profiles.toml")

_KEYS = {"description": str, "client": str, "provider": str, "server": str,
         "client_provider_rtt_ms": (int, float), "provider_server_rtt_ms": (int, float),
         "client_server_rtt_ms": (int, float), "channel_rate_mbit": (int, float),
         "native_rate_mbit": (int, float), "loss": (int, float)}


@dataclass
class LinkEmulation:
    delay_ms: float = 0.0   # one-way, added in each direction
    rate_mbit: float = 0.0  # 0: unlimited
    loss: float = 0.0       # probability per packet and crossing, each direction


@dataclass
class Profile:
    name: str
    description: str
    rtt_ms: dict                      # {"client_provider", "provider_server", "client_server"}
    channel_rate_mbit: float          # 0: unlimited
    links: dict = field(default_factory=dict)   # link name -> LinkEmulation
    source: dict = field(default_factory=dict)  # the raw table

    def as_json(self):
        return {"name": self.name, "description": self.description, "rtt_ms": self.rtt_ms,
                "channel_rate_mbit": self.channel_rate_mbit,
                "links": {k: vars(v) for k, v in self.links.items()}}


def load_all(path=PROFILES_FILE):
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise LabError(f"{path}: {e}") from e
    return doc.get("profiles", {})


def load(name, channel_rate_mbit=None, path=PROFILES_FILE):
    table = load_all(path)
    if name not in table:
        raise LabError(f"unknown profile `{name}' (known: {', '.join(sorted(table))})")
    raw = table[name]
    for k, v in raw.items():
        if k not in _KEYS:
            raise LabError(f"{path}: profile `{name}': unknown key `{k}'")
        if not isinstance(v, _KEYS[k]) or (not isinstance(v, str) and v < 0):
            raise LabError(f"{path}: profile `{name}': bad value for {k}: `{v}'")
    cp = float(raw.get("client_provider_rtt_ms", 0))
    ps = float(raw.get("provider_server_rtt_ms", 0))
    cs = float(raw.get("client_server_rtt_ms", 0))
    dc, dp, ds = (cp + cs - ps) / 4, (cp + ps - cs) / 4, (ps + cs - cp) / 4
    if min(dc, dp, ds) < 0:
        raise LabError(f"profile `{name}': RTTs {cp}/{ps}/{cs} ms break the triangle "
                       "inequality (one spoke would need a negative delay)")
    loss = float(raw.get("loss", 0))
    if loss >= 1:
        raise LabError(f"profile `{name}': loss must be below 1: `{loss}'")
    rate = float(raw.get("channel_rate_mbit", 0) if channel_rate_mbit is None else channel_rate_mbit)
    if rate < 0 or rate > 100000:
        raise LabError(f"channel rate must be 0 (unlimited) to 100000 Mbit/s: `{rate:g}'")
    links = {
        "access": LinkEmulation(0.0, float(raw.get("native_rate_mbit", 0)), 0.0),
        "isp": LinkEmulation(dc, 0.0, loss),
        "provider": LinkEmulation(dp, 0.0, 0.0),
        "dns": LinkEmulation(ds, 0.0, 0.0),
        "srv1": LinkEmulation(ds, 0.0, 0.0),
        "srv2": LinkEmulation(ds, 0.0, 0.0),
    }
    return Profile(name, raw.get("description", ""),
                   {"client_provider": cp, "provider_server": ps, "client_server": cs},
                   rate, links, raw)
