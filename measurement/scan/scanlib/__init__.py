"""quicstep-scan: drives quicstep-probe over a domain list (see measurement/scan/README.md)."""
