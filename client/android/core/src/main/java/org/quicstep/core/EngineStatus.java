package org.quicstep.core;

import java.util.Locale;
import java.util.Map;

/**
 * The engine's status reply (the control socket's "status"), in quicstepctl's vocabulary:
 * paths.channel and paths.native each with bytes (out) and in_bytes, channel_load_ratio (the
 * channel's share of all bytes, both directions), flows.tracked, and channel.health (the
 * channel's WireGuard as the engine judges it: working, idle, unanswered, down, unknown;
 * absent from an engine that does not judge it).
 */
public final class EngineStatus {
    public final long channelBytes; // both directions
    public final long nativeBytes;  // both directions
    public final double channelLoadRatio;
    public final long flows;
    public final String channelHealth; // null: not in the reply

    public EngineStatus(long channelBytes, long nativeBytes, double channelLoadRatio, long flows) {
        this(channelBytes, nativeBytes, channelLoadRatio, flows, null);
    }

    public EngineStatus(long channelBytes, long nativeBytes, double channelLoadRatio, long flows,
            String channelHealth) {
        this.channelBytes = channelBytes;
        this.nativeBytes = nativeBytes;
        this.channelLoadRatio = channelLoadRatio;
        this.flows = flows;
        this.channelHealth = channelHealth;
    }

    /**
     * @throws Json.ParseException when the reply is not JSON, or a field is missing or of the
     *     wrong type (the message names the field).
     */
    public static EngineStatus fromJson(String text) throws Json.ParseException {
        Object root = Json.parse(text);
        long channel = count(root, "paths", "channel", "bytes") + count(root, "paths", "channel", "in_bytes");
        long nat = count(root, "paths", "native", "bytes") + count(root, "paths", "native", "in_bytes");
        double ratio = number(root, "channel_load_ratio");
        if (ratio < 0 || ratio > 1) throw new Json.ParseException("channel_load_ratio " + ratio + " is not in 0-1");
        return new EngineStatus(channel, nat, ratio, count(root, "flows", "tracked"), health(root));
    }

    private static String health(Object root) throws Json.ParseException {
        Object channel = root instanceof Map ? ((Map<?, ?>) root).get("channel") : null;
        if (!(channel instanceof Map) || !((Map<?, ?>) channel).containsKey("health")) return null;
        Object v = ((Map<?, ?>) channel).get("health");
        if (!(v instanceof String)) throw new Json.ParseException("channel.health is not a string");
        return (String) v;
    }

    private static double number(Object root, String... path) throws Json.ParseException {
        Object v = root;
        for (String key : path) {
            if (!(v instanceof Map) || !((Map<?, ?>) v).containsKey(key)) {
                throw new Json.ParseException("no " + String.join(".", path));
            }
            v = ((Map<?, ?>) v).get(key);
        }
        if (!(v instanceof Double)) throw new Json.ParseException(String.join(".", path) + " is not a number");
        return (Double) v;
    }

    private static long count(Object root, String... path) throws Json.ParseException {
        double d = number(root, path);
        if (d < 0 || d != Math.floor(d)) {
            throw new Json.ParseException(String.join(".", path) + " is not a count: " + d);
        }
        return (long) d;
    }

    /**
     * "Channel working. native 10.9 MB, channel 21.6 kB, load ratio 0.20%, 3 flows" for the
     * settings screen; an unanswered channel says what the user can do about it.
     */
    public String summary() {
        String counts = String.format(Locale.ROOT, "native %s, channel %s, load ratio %.2f%%, %d %s",
                bytes(nativeBytes), bytes(channelBytes), channelLoadRatio * 100, flows, flows == 1 ? "flow" : "flows");
        if (channelHealth == null) return counts;
        if (channelHealth.equals("unanswered")) {
            return "Channel unanswered: WireGuard sends and nothing comes back (the provider is down, "
                    + "or WireGuard is blocked here); new connections fail until it answers. " + counts;
        }
        return "Channel " + channelHealth + ". " + counts;
    }

    /** Decimal units, as quicstepctl prints them. */
    static String bytes(long b) {
        if (b < 1000) return b + " B";
        String[] units = {"kB", "MB", "GB", "TB"};
        double v = b;
        int u = -1;
        while (v >= 1000 && u < units.length - 1) {
            v /= 1000;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}
