"""Firefox ESR as a second real browser for the lab (Debian's firefox-esr; its HTTP/3 is
Mozilla's neqo, a QUIC stack of its own, with quinn-udp's GSO and GRO), headless.

Its profile trusts the lab's CA (an NSS database made with certutil: Firefox refuses a
self-signed certificate as a server's), goes to HTTP/3 at once for the given hosts
(`network.http.http3.alt-svc-mapping-for-testing`, as an Alt-Svc would), resolves every
name to one lab address (`network.dns.forceResolve`) and makes no background connections
(updates, telemetry, safe browsing, remote settings, captive-portal and connectivity checks
off). A load is `--screenshot`: Firefox writes the PNG after the page's load event (the
whole document received) and exits."""
import os
import subprocess

PREFS = {
    "network.http.http3.enable": True,
    # Firefox turns HTTP/3 off when a root it did not ship is in use, unless told not to.
    "network.http.http3.disable_when_third_party_roots_found": False,
    "network.trr.mode": 5,
    "network.dns.disablePrefetch": True,
    "network.prefetch-next": False,
    "network.predictor.enabled": False,
    "network.http.speculative-parallel-limit": 0,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "app.update.auto": False,
    "app.normandy.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "services.settings.server": "http://127.0.0.1:1/",
    "messaging-system.rsexperimentloader.enabled": False,
    "dom.push.enabled": False,
    "security.OCSP.enabled": 0,
    "security.remote_settings.crlite_filters.enabled": False,
    "security.remote_settings.intermediates.enabled": False,
}


def binary():
    for path in ("/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox-esr"):
        if os.path.exists(path):
            return path
    raise RuntimeError("firefox-esr is not installed (scripts/install.sh installs it)")


def make_profile(directory, ca, h3_hosts, address):
    """A fresh profile in `directory` trusting `ca`, on HTTP/3 for `h3_hosts` (port 443),
    every name resolved to `address`. Returns the directory."""
    os.makedirs(directory, exist_ok=True)
    db = f"sql:{directory}"
    subprocess.run(["certutil", "-N", "-d", db, "--empty-password"], check=True,
                   capture_output=True)
    subprocess.run(["certutil", "-A", "-d", db, "-n", "QUICstep lab CA", "-t", "C,,", "-i", ca],
                   check=True, capture_output=True)
    prefs = dict(PREFS)
    prefs["network.http.http3.alt-svc-mapping-for-testing"] = ",".join(
        f"{h};h3=:443" for h in h3_hosts)
    prefs["network.dns.forceResolve"] = address
    with open(os.path.join(directory, "user.js"), "w") as f:
        for k, v in prefs.items():
            value = ("true" if v else "false") if isinstance(v, bool) else (
                str(v) if isinstance(v, int) else f'"{v}"')
            f.write(f'user_pref("{k}", {value});\n')
    return directory


def command(home, profile, url, screenshot, timeout):
    """firefox-esr loading `url` headless with `profile`, writing `screenshot` once loaded,
    killed after `timeout` seconds."""
    return ["env", f"HOME={home}", "MOZ_HEADLESS=1", "timeout", "-k", "5", str(timeout),
            binary(), "--headless", "--no-remote", "--profile", profile,
            f"--screenshot={screenshot}", url]


PAGE = "page.html"
MARKER = "QUICstep big page"


def start_site(procs, netns, addresses, work, size_mb):
    """Debian's gtlsserver on port 443 of each address in `netns` (one process each), serving
    PAGE: `size_mb` MB of hidden text, then MARKER, with a certificate from a throwaway CA.
    Returns (the CA's certificate, {address: the server's log}, the server processes: the
    caller stops them, with `procs`)."""
    from qs_support import certs
    from qs_support.shadowsocks import wait_bound
    htdocs = os.path.join(work, "htdocs")
    os.makedirs(htdocs, exist_ok=True)
    with open(os.path.join(htdocs, PAGE), "w") as f:
        line = "QUICstep " * 11 + "\n"
        f.write('<html><body><pre style="display:none">')
        f.write(line * (size_mb * 1000 * 1000 // len(line)))
        f.write(f'</pre><p style="font-size:40px">{MARKER}</p></body></html>\n')
    ca, key, cert = certs.make_ca_signed(work)
    logs, servers = {}, []
    for addr in addresses:
        logs[addr] = os.path.join(work, f"gtlsserver-{addr}.log")
        servers.append(procs.start(netns, ["gtlsserver", f"--htdocs={htdocs}", addr, "443", key,
                                           cert], logs[addr]))
        wait_bound(netns, "u", addr, 443, servers[-1])
    return ca, logs, servers


def load(in_client, work, ca, address, log, timeout=60):
    """Firefox in the client host (`in_client(*argv, check=False, timeout=...)`) loads PAGE
    from `address` over HTTP/3 with a fresh profile. Returns (seconds, why) where why is
    None for a page that arrived whole: the server closed its stream with H3_NO_ERROR
    (0x100; not cancelled, 0x10c) and Firefox wrote its screenshot after the load event."""
    import time
    profile = make_profile(os.path.join(work, f"profile-{address}"), ca, ["open.test"], address)
    shot = os.path.join(work, f"page-{address}.png")
    t0 = time.time()
    res = in_client(*command(work, profile, f"https://open.test/{PAGE}", shot, timeout),
                    check=False, timeout=timeout + 30)
    took = time.time() - t0
    with open(log) as f:
        text = f.read()
    if f"[:path: /{PAGE}]" not in text:
        return took, f"{address}: the request never reached the server: {res.stderr[-1500:]}"
    if "closed with error code 256" not in text:
        return took, f"{address}: the response did not end whole: {res.stderr[-1500:]}"
    if not os.path.exists(shot):
        return took, f"{address}: no screenshot (the page never loaded): {res.stderr[-1500:]}"
    return took, None
