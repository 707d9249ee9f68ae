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
