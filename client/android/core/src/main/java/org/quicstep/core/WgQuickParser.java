package org.quicstep.core;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;

/**
 * Parses a wg-quick file (wg-quick(8), wg(8)): sections [Interface] and [Peer], "Key =
 * value" lines, '#' comments, keys case-insensitive, list values comma-separated and
 * repeatable. Every value is checked whole and in range; an error names the file and line
 * and quotes the line. Keys that only mean something to wg-quick on a desktop (Table,
 * SaveConfig, FwMark) are accepted and ignored; its shell hooks (PreUp, PostUp, PreDown,
 * PostDown) are refused, since the app cannot run them and a file that relies on them
 * (a kill switch, say) would silently lose what they did.
 */
public final class WgQuickParser {
    private WgQuickParser() {}

    private enum Section { NONE, INTERFACE, PEER }

    /** A section being read: what it has so far, and where it began. */
    private static final class Draft {
        final int line;
        String privateKey, publicKey, presharedKey;
        final List<InetNetwork> addresses = new ArrayList<>();
        final List<InetAddress> dns = new ArrayList<>();
        final List<String> dnsSearch = new ArrayList<>();
        final List<InetNetwork> allowedIps = new ArrayList<>();
        Integer mtu, listenPort, keepalive;
        Endpoint endpoint;

        Draft(int line) {
            this.line = line;
        }
    }

    /**
     * Parses `text`, the contents of the file called `file` (for messages).
     *
     * @throws ConfigException on the first bad line, or a missing section or key.
     */
    public static WgQuickConfig parse(String text, String file) throws ConfigException {
        Section section = Section.NONE;
        Draft iface = null;
        Draft current = null;
        List<Draft> peers = new ArrayList<>();
        String[] lines = text.split("\r?\n", -1);
        for (int n = 1; n <= lines.length; n++) {
            String raw = lines[n - 1];
            int hash = raw.indexOf('#');
            String line = (hash < 0 ? raw : raw.substring(0, hash)).trim();
            if (line.isEmpty()) continue;
            if (line.startsWith("[")) {
                String name = line.toLowerCase(Locale.ROOT);
                if (name.equals("[interface]")) {
                    if (iface != null) throw ConfigException.atLine(file, n, "a second [Interface]", raw);
                    section = Section.INTERFACE;
                    current = iface = new Draft(n);
                } else if (name.equals("[peer]")) {
                    section = Section.PEER;
                    current = new Draft(n);
                    peers.add(current);
                } else {
                    throw ConfigException.atLine(file, n, "not a section wg-quick knows", raw);
                }
                continue;
            }
            int eq = line.indexOf('=');
            if (eq <= 0) throw ConfigException.atLine(file, n, "not a `Key = value' line", raw);
            String key = line.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            String value = line.substring(eq + 1).trim();
            if (section == Section.NONE) {
                throw ConfigException.atLine(file, n, "a key before any [Interface] or [Peer]", raw);
            }
            if (value.isEmpty()) throw ConfigException.atLine(file, n, "an empty value", raw);
            if (section == Section.INTERFACE) {
                interfaceKey(current, key, value, file, n, raw);
            } else {
                peerKey(current, key, value, file, n, raw);
            }
        }
        return build(iface, peers, file);
    }

    private static void interfaceKey(Draft d, String key, String value, String file, int n, String raw)
            throws ConfigException {
        switch (key) {
            case "privatekey":
                if (d.privateKey != null) throw ConfigException.atLine(file, n, "a second PrivateKey", raw);
                d.privateKey = key(value, "PrivateKey", file, n, raw);
                break;
            case "address":
                for (String item : list(value, file, n, raw)) {
                    InetNetwork a = InetNetwork.parse(item);
                    if (a == null) {
                        throw ConfigException.atLine(file, n, "Address `" + item + "' is not an IP address with an optional /prefix", raw);
                    }
                    d.addresses.add(a);
                }
                break;
            case "dns":
                for (String item : list(value, file, n, raw)) {
                    InetAddress a = InetNetwork.parseAddress(item);
                    if (a != null) {
                        d.dns.add(a);
                    } else if (Endpoint.isHostName(item)) {
                        d.dnsSearch.add(item);
                    } else {
                        throw ConfigException.atLine(file, n, "DNS `" + item + "' is neither an IP address nor a search domain", raw);
                    }
                }
                break;
            case "mtu":
                d.mtu = number(value, 1280, 65535, "MTU is not a number in 1280-65535", file, n, raw);
                break;
            case "listenport":
                d.listenPort = number(value, 0, 65535, "ListenPort is not a number in 0-65535", file, n, raw);
                break;
            case "table":
            case "saveconfig":
            case "fwmark":
                break; // desktop wg-quick's business; the app routes through VpnService
            case "preup":
            case "postup":
            case "predown":
            case "postdown":
                throw ConfigException.atLine(file, n, "the app cannot run wg-quick's shell hooks; remove the line", raw);
            default:
                throw ConfigException.atLine(file, n, "not a key of [Interface]", raw);
        }
    }

    private static void peerKey(Draft d, String key, String value, String file, int n, String raw)
            throws ConfigException {
        switch (key) {
            case "publickey":
                if (d.publicKey != null) throw ConfigException.atLine(file, n, "a second PublicKey", raw);
                d.publicKey = key(value, "PublicKey", file, n, raw);
                break;
            case "presharedkey":
                d.presharedKey = key(value, "PresharedKey", file, n, raw);
                break;
            case "allowedips":
                for (String item : list(value, file, n, raw)) {
                    InetNetwork a = InetNetwork.parse(item);
                    if (a == null) {
                        throw ConfigException.atLine(file, n, "AllowedIPs `" + item + "' is not an IP network", raw);
                    }
                    d.allowedIps.add(a);
                }
                break;
            case "endpoint":
                d.endpoint = Endpoint.parse(value);
                if (d.endpoint == null) {
                    throw ConfigException.atLine(file, n, "Endpoint is not host:port or [IPv6]:port with a port in 1-65535", raw);
                }
                break;
            case "persistentkeepalive":
                d.keepalive = value.equalsIgnoreCase("off") ? Integer.valueOf(0)
                        : number(value, 0, 65535, "PersistentKeepalive is neither 0/off nor 1-65535", file, n, raw);
                break;
            default:
                throw ConfigException.atLine(file, n, "not a key of [Peer]", raw);
        }
    }

    private static WgQuickConfig build(Draft iface, List<Draft> peers, String file) throws ConfigException {
        if (iface == null) throw new ConfigException(file + ": no [Interface] section");
        String at = file + ":" + iface.line + ": [Interface] ";
        if (iface.privateKey == null) throw new ConfigException(at + "has no PrivateKey");
        if (iface.addresses.isEmpty()) {
            throw new ConfigException(at + "has no Address (the tunnel's address is the TUN's)");
        }
        if (peers.isEmpty()) throw new ConfigException(file + ": no [Peer] section");
        List<WgQuickConfig.Peer> out = new ArrayList<>();
        for (Draft p : peers) {
            String pat = file + ":" + p.line + ": [Peer] ";
            if (p.publicKey == null) throw new ConfigException(pat + "has no PublicKey");
            if (p.endpoint == null) {
                throw new ConfigException(pat + "has no Endpoint (the app starts the handshake, so it needs the provider's address)");
            }
            if (p.allowedIps.isEmpty()) throw new ConfigException(pat + "has no AllowedIPs");
            out.add(new WgQuickConfig.Peer(p.publicKey, p.presharedKey, p.allowedIps, p.endpoint, p.keepalive));
        }
        WgQuickConfig.Interface i = new WgQuickConfig.Interface(iface.privateKey, iface.addresses,
                iface.dns, iface.dnsSearch, iface.mtu, iface.listenPort);
        return new WgQuickConfig(i, out);
    }

    /** A 32-byte key in standard base64 (44 characters, one '='). */
    private static String key(String value, String what, String file, int n, String raw) throws ConfigException {
        if (value.length() == 44 && value.charAt(43) == '=') {
            try {
                if (Base64.getDecoder().decode(value).length == 32) return value;
            } catch (IllegalArgumentException e) {
                // not base64: the error below
            }
        }
        throw ConfigException.atLine(file, n, what + " is not a 32-byte base64 key", raw);
    }

    private static List<String> list(String value, String file, int n, String raw) throws ConfigException {
        List<String> items = new ArrayList<>();
        for (String item : value.split(",", -1)) {
            String t = item.trim();
            if (t.isEmpty()) throw ConfigException.atLine(file, n, "an empty item in a list", raw);
            items.add(t);
        }
        return items;
    }

    private static Integer number(String value, int min, int max, String what, String file, int n, String raw)
            throws ConfigException {
        Integer v = InetNetwork.parseDecimal(value, min, max);
        if (v == null) throw ConfigException.atLine(file, n, what, raw);
        return v;
    }
}
