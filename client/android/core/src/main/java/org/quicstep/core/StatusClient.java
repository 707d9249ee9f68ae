package org.quicstep.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The engine's control socket (--control-socket), quicstepctl's protocol: one request line
 * ("status", or "network-changed"), one reply, then the engine closes the connection.
 */
public final class StatusClient {
    /** A reply larger than this is not a status reply. */
    static final int MAX_REPLY = 1 << 20;

    private final LocalStream.Connector connector;
    private final String path;
    private final int timeoutMs;

    public StatusClient(LocalStream.Connector connector, String path, int timeoutMs) {
        this.connector = connector;
        this.path = path;
        this.timeoutMs = timeoutMs;
    }

    /** Sends `request` and returns the whole reply. */
    public String request(String request) throws IOException {
        if (request.indexOf('\n') >= 0) throw new IllegalArgumentException("one line: " + request);
        try (LocalStream s = connector.connect(path)) {
            s.setReadTimeoutMillis(timeoutMs);
            s.write((request + "\n").getBytes(StandardCharsets.UTF_8));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            int n;
            while ((n = s.read(buf)) > 0) {
                out.write(buf, 0, n);
                if (out.size() > MAX_REPLY) throw new IOException(path + ": the reply exceeds " + MAX_REPLY + " bytes");
            }
            return new String(out.toByteArray(), StandardCharsets.UTF_8);
        }
    }

    /** "status", parsed. */
    public EngineStatus status() throws IOException {
        String reply = request("status");
        try {
            return EngineStatus.fromJson(reply);
        } catch (Json.ParseException e) {
            throw new IOException(path + ": not a status reply: " + e.getMessage(), e);
        }
    }

    /**
     * "network-changed": the phone's default network changed (Wi-Fi to cellular, a new
     * Wi-Fi); the engine opens its relays and its helper's socket again on it, so that
     * servers see the new address and migrate.
     *
     * @throws IOException when the engine is not there, or does not answer {"ok":true}.
     */
    public void networkChanged() throws IOException {
        String reply = request("network-changed");
        try {
            Object v = Json.parse(reply);
            if (v instanceof java.util.Map && Boolean.TRUE.equals(((java.util.Map<?, ?>) v).get("ok"))) return;
        } catch (Json.ParseException e) {
            // reported below with the reply
        }
        throw new IOException(path + ": network-changed was answered " + reply.trim());
    }
}
