package org.quicstep.core;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What the VPN service asks VpnService.Builder for, decided in plain Java: the tunnel's
 * addresses (the TUN's address is the tunnel address, so any provider works), its DNS
 * servers, the MTU, routes for everything (0.0.0.0/0 and ::/0: every packet of every app
 * reaches the engine, which decides channel or native), and the apps that bypass the VPN —
 * the app itself first (its engine and helper sockets are protected as well), then the
 * user's exclusions.
 */
public final class TunnelPlan {
    public final List<InetNetwork> addresses;
    public final List<InetAddress> dnsServers;
    public final List<String> searchDomains;
    public final List<InetNetwork> routes;
    public final int mtu;
    public final List<String> disallowedApps;

    private TunnelPlan(List<InetNetwork> addresses, List<InetAddress> dns, List<String> search,
                       List<InetNetwork> routes, int mtu, List<String> disallowed) {
        this.addresses = WgQuickConfig.frozen(addresses);
        this.dnsServers = WgQuickConfig.frozen(dns);
        this.searchDomains = WgQuickConfig.frozen(search);
        this.routes = WgQuickConfig.frozen(routes);
        this.mtu = mtu;
        this.disallowedApps = WgQuickConfig.frozen(disallowed);
    }

    /** The routes of every plan: all of IPv4 and all of IPv6. */
    public static List<InetNetwork> defaultRoutes() {
        List<InetNetwork> r = new ArrayList<InetNetwork>();
        r.add(InetNetwork.parse("0.0.0.0/0"));
        r.add(InetNetwork.parse("::/0"));
        return r;
    }

    /**
     * ownPackage: the app's package name, always excluded. excluded: the user's list
     * (AppExclusions.parse), in order, without repeats.
     */
    public static TunnelPlan of(WgQuickConfig c, String ownPackage, List<String> excluded) {
        Set<String> apps = new LinkedHashSet<String>();
        apps.add(ownPackage);
        apps.addAll(excluded);
        return new TunnelPlan(c.iface.addresses, c.iface.dns, c.iface.dnsSearch, defaultRoutes(),
                c.iface.effectiveMtu(), new ArrayList<String>(apps));
    }
}
