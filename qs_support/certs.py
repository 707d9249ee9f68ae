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


def make_ca_signed(directory, names=LAB_CERT_NAMES):
    """A throwaway CA and a server certificate it signs for `names` (ECDSA P-256, valid 2
    days), for clients that refuse a self-signed certificate used as a server's (Firefox:
    a CA certificate as end entity) and trust a root instead: ca.pem, key.pem, cert.pem in
    `directory`. Returns (ca, key, cert)."""
    def path(name):
        return os.path.join(directory, name)

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", path("ca-key.pem"), "-out", path("ca.pem"),
            "-days", "2", "-subj", "/CN=QUICstep lab CA")
    openssl("req", *ec, "-keyout", path("key.pem"), "-out", path("cert.csr"),
            "-subj", f"/CN={names[0]}")
    with open(path("cert.ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
                "subjectAltName=" + ",".join(f"DNS:{n}" for n in names) + "\n")
    openssl("x509", "-req", "-in", path("cert.csr"), "-CA", path("ca.pem"), "-CAkey",
            path("ca-key.pem"), "-CAcreateserial", "-out", path("cert.pem"), "-days", "2",
            "-extfile", path("cert.ext"))
    return path("ca.pem"), path("key.pem"), path("cert.pem")
