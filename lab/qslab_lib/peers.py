"""Real peers in the lab, shared by the demo and the lab tests: a throwaway certificate for
the lab's names, and the command line of chromium-headless-shell loading a page."""
import os
import subprocess

# gtlsclient sends SNI "localhost" when given an address; the rest are the lab's DNS names.
LAB_CERT_NAMES = ("localhost", "open.test", "www.open.test", "blocked.test", "www.blocked.test")


def spki_hash(cert):
    """base64(SHA-256(SubjectPublicKeyInfo)): Chromium's --ignore-certificate-errors-spki-list."""
    return subprocess.run(f"openssl x509 -in '{cert}' -pubkey -noout | openssl pkey -pubin -outform der"
                          " | openssl dgst -sha256 -binary | base64", shell=True, check=True,
                          capture_output=True, text=True).stdout.strip()


def make_certificate(directory, names=LAB_CERT_NAMES):
    """A self-signed ECDSA P-256 certificate for `names` (subjectAltName; Go and Chromium
    ignore the CN), valid 2 days, in `directory`. Returns (key, cert, spki)."""
    key, cert = os.path.join(directory, "key.pem"), os.path.join(directory, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=" + ",".join(f"DNS:{n}" for n in names)],
                   check=True, capture_output=True)
    return key, cert, spki_hash(cert)


def chromium_binary():
    for path in ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium-headless-shell"):
        if os.path.exists(path):
            return path
    raise RuntimeError("chromium-headless-shell is not installed (scripts/install.sh installs it)")


def chromium_command(home, spki, url, timeout, flags=()):
    """chromium-headless-shell printing the DOM of `url`, with a fresh profile under `home`,
    no background networking (the lab has no internet), trusting the certificate whose SPKI
    hash is `spki`, killed after `timeout` seconds. `flags`: e.g. --enable-quic and
    --origin-to-force-quic-on=HOST:443."""
    return ["env", f"HOME={home}", "timeout", "-k", "5", str(timeout), chromium_binary(),
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-breakpad",
            f"--user-data-dir={os.path.join(home, 'profile')}",
            f"--ignore-certificate-errors-spki-list={spki}", *flags, "--dump-dom", url]
