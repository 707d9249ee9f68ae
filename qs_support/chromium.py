"""chromium-headless-shell as the lab's real browser: where it is, and its command line."""
import os


def binary():
    for path in ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium-headless-shell"):
        if os.path.exists(path):
            return path
    raise RuntimeError("chromium-headless-shell is not installed (scripts/install.sh installs it)")


def command(home, spki, url, timeout, flags=()):
    """chromium-headless-shell printing the DOM of `url`, with a fresh profile under `home`,
    no background networking (the lab has no internet), trusting the certificate whose SPKI
    hash is `spki`, killed after `timeout` seconds. `flags`: e.g. --enable-quic and
    --origin-to-force-quic-on=HOST:443."""
    return ["env", f"HOME={home}", "timeout", "-k", "5", str(timeout), binary(),
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-breakpad",
            f"--user-data-dir={os.path.join(home, 'profile')}",
            f"--ignore-certificate-errors-spki-list={spki}", *flags, "--dump-dom", url]
