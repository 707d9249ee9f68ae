package org.quicstep.core;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Resolves the peers' endpoint names before the engine starts: the engine makes no name
 * lookups (docs/DESIGN.md). On Android this runs before VpnService.establish(), so the
 * lookup uses the phone's network, not the tunnel that does not exist yet.
 */
public final class EndpointResolver {
    /** Name lookups: InetAddress.getAllByName on Android, a table in tests. */
    public interface NameResolver {
        /** Every address of `host`; throws IOException (UnknownHostException) when it has none. */
        List<InetAddress> resolve(String host) throws IOException;
    }

    /** The system's resolver. */
    public static final NameResolver SYSTEM = new NameResolver() {
        @Override
        public List<InetAddress> resolve(String host) throws IOException {
            List<InetAddress> out = new ArrayList<InetAddress>();
            for (InetAddress a : InetAddress.getAllByName(host)) out.add(a);
            return out;
        }
    };

    private final NameResolver resolver;
    private final boolean preferIpv4;

    /**
     * preferIpv4: take the name's first IPv4 address when it has one (a phone's network is
     * more often IPv4-only than IPv6-only); otherwise its first address.
     */
    public EndpointResolver(NameResolver resolver, boolean preferIpv4) {
        this.resolver = resolver;
        this.preferIpv4 = preferIpv4;
    }

    /**
     * The config with every endpoint numeric (numeric ones are kept as they are).
     *
     * @throws ConfigException naming the peer and the host when a name does not resolve.
     */
    public WgQuickConfig resolve(WgQuickConfig c) throws ConfigException {
        List<WgQuickConfig.Peer> peers = new ArrayList<WgQuickConfig.Peer>();
        int n = 0;
        for (WgQuickConfig.Peer p : c.peers) {
            n++;
            if (p.endpoint.numericAddress() != null) {
                peers.add(p);
                continue;
            }
            List<InetAddress> all;
            try {
                all = resolver.resolve(p.endpoint.host);
            } catch (IOException e) {
                throw new ConfigException("peer " + n + ": cannot resolve the endpoint `" + p.endpoint.host + "': " + e.getMessage());
            }
            if (all == null || all.isEmpty()) {
                throw new ConfigException("peer " + n + ": the endpoint `" + p.endpoint.host + "' has no address");
            }
            InetAddress chosen = all.get(0);
            if (preferIpv4) {
                for (InetAddress a : all) {
                    if (a instanceof Inet4Address) {
                        chosen = a;
                        break;
                    }
                }
            }
            peers.add(p.withEndpoint(Endpoint.of(chosen, p.endpoint.port)));
        }
        return new WgQuickConfig(c.iface, peers);
    }
}
