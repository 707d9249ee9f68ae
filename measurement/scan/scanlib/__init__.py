"""quicstep-scan: drives quicstep-probe over a domain list (see measurement/README.md, Scanning)."""
