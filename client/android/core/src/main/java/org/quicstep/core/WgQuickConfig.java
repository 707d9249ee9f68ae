package org.quicstep.core;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A wg-quick file as the app uses it: the interface (its keys and the tunnel's addresses,
 * DNS servers and MTU) and its peers. Immutable; keys are kept in wg-quick's base64.
 */
public final class WgQuickConfig {
    /** The [Interface] section. */
    public static final class Interface {
        public final String privateKey;            // base64, 32 bytes
        public final List<InetNetwork> addresses;  // the tunnel addresses (the TUN's), at least one
        public final List<InetAddress> dns;        // DNS servers (numeric), possibly none
        public final List<String> dnsSearch;       // DNS entries that are names: search domains
        public final Integer mtu;                  // null: the default (1420)
        public final Integer listenPort;           // null: a random port

        public Interface(String privateKey, List<InetNetwork> addresses, List<InetAddress> dns,
                         List<String> dnsSearch, Integer mtu, Integer listenPort) {
            this.privateKey = privateKey;
            this.addresses = frozen(addresses);
            this.dns = frozen(dns);
            this.dnsSearch = frozen(dnsSearch);
            this.mtu = mtu;
            this.listenPort = listenPort;
        }

        /** The MTU the TUN and the channel use. */
        public int effectiveMtu() {
            return mtu == null ? DEFAULT_MTU : mtu;
        }
    }

    /** One [Peer] section. */
    public static final class Peer {
        public final String publicKey;             // base64, 32 bytes
        public final String presharedKey;          // base64, or null
        public final List<InetNetwork> allowedIps;
        public final Endpoint endpoint;            // the provider; a name until resolved
        public final Integer persistentKeepalive;  // seconds, null or 0: off

        public Peer(String publicKey, String presharedKey, List<InetNetwork> allowedIps,
                    Endpoint endpoint, Integer persistentKeepalive) {
            this.publicKey = publicKey;
            this.presharedKey = presharedKey;
            this.allowedIps = frozen(allowedIps);
            this.endpoint = endpoint;
            this.persistentKeepalive = persistentKeepalive;
        }

        /** The same peer with another endpoint (a resolved one). */
        public Peer withEndpoint(Endpoint e) {
            return new Peer(publicKey, presharedKey, allowedIps, e, persistentKeepalive);
        }
    }

    /** wg-quick's default MTU, and the helper's. */
    public static final int DEFAULT_MTU = 1420;

    public final Interface iface;
    public final List<Peer> peers;

    public WgQuickConfig(Interface iface, List<Peer> peers) {
        this.iface = iface;
        this.peers = frozen(peers);
    }

    /** True when every peer's endpoint is a numeric address (what the engine needs). */
    public boolean endpointsNumeric() {
        for (Peer p : peers) {
            if (p.endpoint.numericAddress() == null) return false;
        }
        return true;
    }

    static <T> List<T> frozen(List<T> l) {
        return Collections.unmodifiableList(new ArrayList<T>(l));
    }
}
