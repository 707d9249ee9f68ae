package org.quicstep.core;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * An address with a prefix length ("10.8.0.2/32", "fd00::2/128"), parsed from numeric text
 * only: a name is never looked up here.
 */
public final class InetNetwork {
    public final InetAddress address;
    public final int prefix;

    public InetNetwork(InetAddress address, int prefix) {
        this.address = address;
        this.prefix = prefix;
    }

    /**
     * Parses "ADDRESS[/PREFIX]"; without a prefix the network is the single address (32 or
     * 128). Returns null for anything else, including names and out-of-range prefixes.
     */
    public static InetNetwork parse(String text) {
        String s = text.trim();
        int slash = s.indexOf('/');
        InetAddress a = parseAddress(slash < 0 ? s : s.substring(0, slash));
        if (a == null) return null;
        int max = a instanceof Inet4Address ? 32 : 128;
        if (slash < 0) return new InetNetwork(a, max);
        Integer p = parseDecimal(s.substring(slash + 1), 0, max);
        return p == null ? null : new InetNetwork(a, p);
    }

    /**
     * A numeric IPv4 (dotted quad) or IPv6 address, or null. The text is checked before
     * InetAddress sees it, because InetAddress.getByName would resolve a name.
     */
    public static InetAddress parseAddress(String text) {
        String s = text.trim();
        if (s.isEmpty()) return null;
        boolean v6 = s.indexOf(':') >= 0;
        if (v6) {
            if (s.indexOf('%') >= 0) return null; // no scoped addresses in a tunnel config
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (!(c == ':' || c == '.' || Character.digit(c, 16) >= 0)) return null;
            }
        } else {
            String[] parts = s.split("\\.", -1);
            if (parts.length != 4) return null;
            for (String part : parts) {
                if (part.length() > 1 && part.charAt(0) == '0') return null; // no octal-looking octets
                if (parseDecimal(part, 0, 255) == null) return null;
            }
        }
        try {
            InetAddress a = InetAddress.getByName(s);
            // "::ffff:192.0.2.1" comes back as an IPv4 address: one text, one family.
            return v6 == (a instanceof Inet4Address) ? null : a;
        } catch (UnknownHostException | SecurityException e) {
            return null;
        }
    }

    /** A whole decimal number in [min, max] with no sign or spaces, or null. */
    public static Integer parseDecimal(String s, int min, int max) {
        if (s.isEmpty() || s.length() > 10) return null;
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            int d = s.charAt(i) - '0';
            if (d < 0 || d > 9) return null;
            v = v * 10 + d;
        }
        return v < min || v > max ? null : (int) v;
    }

    /** "address/prefix", with the address in its canonical text form. */
    @Override
    public String toString() {
        return address.getHostAddress() + "/" + prefix;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof InetNetwork)) return false;
        InetNetwork n = (InetNetwork) o;
        return prefix == n.prefix && address.equals(n.address);
    }

    @Override
    public int hashCode() {
        return address.hashCode() * 31 + prefix;
    }
}
