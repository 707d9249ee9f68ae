package org.quicstep.core;

import java.net.Inet6Address;
import java.net.InetAddress;

/**
 * A peer's endpoint as wg-quick writes it: "host:port", "192.0.2.1:51820" or
 * "[2001:db8::1]:51820". The host may be a name until EndpointResolver replaces it.
 */
public final class Endpoint {
    public final String host;
    public final int port;

    public Endpoint(String host, int port) {
        this.host = host;
        this.port = port;
    }

    /** Parses "host:port" and "[v6]:port"; null if the text is neither. */
    public static Endpoint parse(String text) {
        String s = text.trim();
        String host;
        String port;
        if (s.startsWith("[")) {
            int close = s.indexOf("]:");
            if (close < 0) return null;
            host = s.substring(1, close);
            port = s.substring(close + 2);
            if (InetNetwork.parseAddress(host) == null || host.indexOf(':') < 0) return null;
        } else {
            int colon = s.lastIndexOf(':');
            if (colon <= 0 || s.indexOf(':') != colon) return null; // a bare v6 needs brackets
            host = s.substring(0, colon);
            port = s.substring(colon + 1);
            if (!isHostName(host) && InetNetwork.parseAddress(host) == null) return null;
        }
        Integer p = InetNetwork.parseDecimal(port, 1, 65535);
        return p == null ? null : new Endpoint(host, p);
    }

    /** The numeric address, or null while the host is a name. */
    public InetAddress numericAddress() {
        return InetNetwork.parseAddress(host);
    }

    static Endpoint of(InetAddress address, int port) {
        return new Endpoint(address.getHostAddress(), port);
    }

    /** A DNS name: labels of letters, digits and hyphens, not all-numeric. */
    static boolean isHostName(String h) {
        if (h.isEmpty() || h.length() > 253) return false;
        boolean letter = false;
        for (String label : h.split("\\.", -1)) {
            if (label.isEmpty() || label.length() > 63) return false;
            if (label.charAt(0) == '-' || label.charAt(label.length() - 1) == '-') return false;
            for (int i = 0; i < label.length(); i++) {
                char c = label.charAt(i);
                boolean alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                if (!(alpha || (c >= '0' && c <= '9') || c == '-')) return false;
                letter |= alpha || c == '-';
            }
        }
        return letter;
    }

    /** wg-quick's form; an IPv6 address in brackets. */
    @Override
    public String toString() {
        InetAddress a = numericAddress();
        String h = a instanceof Inet6Address ? "[" + a.getHostAddress() + "]" : host;
        return h + ":" + port;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Endpoint)) return false;
        Endpoint e = (Endpoint) o;
        return port == e.port && host.equals(e.host);
    }

    @Override
    public int hashCode() {
        return host.hashCode() * 31 + port;
    }
}
