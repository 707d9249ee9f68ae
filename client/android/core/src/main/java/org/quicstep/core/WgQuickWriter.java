package org.quicstep.core;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes a config back as a wg-quick file: the copy the engine reads (--wg-config), with
 * every endpoint numeric. Parsing the result gives the same config.
 */
public final class WgQuickWriter {
    private WgQuickWriter() {}

    public static String write(WgQuickConfig c) {
        StringBuilder b = new StringBuilder();
        WgQuickConfig.Interface i = c.iface;
        b.append("[Interface]\n");
        b.append("PrivateKey = ").append(i.privateKey).append('\n');
        b.append("Address = ").append(join(i.addresses)).append('\n');
        List<Object> dns = new ArrayList<Object>();
        for (InetAddress a : i.dns) dns.add(a.getHostAddress());
        dns.addAll(i.dnsSearch);
        if (!dns.isEmpty()) b.append("DNS = ").append(join(dns)).append('\n');
        if (i.mtu != null) b.append("MTU = ").append(i.mtu).append('\n');
        if (i.listenPort != null) b.append("ListenPort = ").append(i.listenPort).append('\n');
        for (WgQuickConfig.Peer p : c.peers) {
            b.append("\n[Peer]\n");
            b.append("PublicKey = ").append(p.publicKey).append('\n');
            if (p.presharedKey != null) b.append("PresharedKey = ").append(p.presharedKey).append('\n');
            b.append("AllowedIPs = ").append(join(p.allowedIps)).append('\n');
            b.append("Endpoint = ").append(p.endpoint).append('\n');
            if (p.persistentKeepalive != null) {
                b.append("PersistentKeepalive = ").append(p.persistentKeepalive).append('\n');
            }
        }
        return b.toString();
    }

    private static String join(List<?> items) {
        StringBuilder b = new StringBuilder();
        for (Object o : items) {
            if (b.length() > 0) b.append(", ");
            b.append(o);
        }
        return b.toString();
    }
}
