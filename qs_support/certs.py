"""Throwaway certificates for the lab's servers, and their pins for Chromium."""
import os
import subprocess

# gtlsclient sends SNI "localhost" when given an address; the rest are the lab's DNS names.
LAB_CERT_NAMES = ("localhost", "open.test", "www.open.test", "blocked.test", "www.blocked.test")


def spki_hash(cert):
    """base64(SHA-256(SubjectPublicKeyInfo)): Chromium's --ignore-certificate-errors-spki-list."""
    return subprocess.run(f"openssl x509 -in '{cert}' -pubkey -noout | openssl pkey -pubin -outform der"
                          " | openssl dgst -sha256 -binary | base64", shell=True, check=True,
                          capture_output=True, text=True).stdout.strip()


def make_certificate(directory, names=LAB_CERT_NAMES, cn="localhost"):
    """A self-signed ECDSA P-256 certificate for `names` (subjectAltName; Go and Chromium
    ignore the CN), valid 2 days, as key.pem and cert.pem in `directory`.
    Returns (key, cert, spki)."""
    key, cert = os.path.join(directory, "key.pem"), os.path.join(directory, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", f"/CN={cn}", "-addext",
                    "subjectAltName=" + ",".join(f"DNS:{n}" for n in names)],
                   check=True, capture_output=True)
    return key, cert, spki_hash(cert)
