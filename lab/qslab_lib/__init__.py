"""qslab: the QUICstep lab — client, censor, channel provider, internet, servers and DNS
in network namespaces on one machine. One concept per module:

  shell.py      running commands (in the root namespace or a host's namespace)
  topology.py   the address plan: hosts, links, addresses, routes (pure data)
  netns.py      creating and deleting namespaces, veths, addresses, routes, NAT
  wireguard.py  the handshake channel (wireguard-go + wg)
  dns.py        the lab DNS server (dnsmasq) and the client's resolver
  links.py      link emulation: rate (tbf) and delay/loss (the delay line)
  profiles.py   named link profiles (lab/profiles.toml)
  state.py      the state dir (/run/qslab): pid files, lab.json
  lab.py        up / down / status: the steps in order, with cleanup on failure
  path_modes.py native / full VPN / QUICstep: switching the client between them

What the lab's tests and tools share beyond the lab itself (certificates, Chromium's command
line, processes, captures, throwaway namespace pairs) is in qs_support/ at the repository's
root.
"""
